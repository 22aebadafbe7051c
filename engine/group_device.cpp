// SPDX-License-Identifier: Apache-2.0
#include "engine/group_device.h"

#include <vector>

#include "engine/session_device.h"
#include "engine/shared_device_weights.h"

namespace onebit {

GroupDevice prepare_group_device(SessionDevice& device, const WeightSource& weight, Counters& counters) {
  // The device takes int8 weights; uint8 ones are shifted by -128 as the host kernels store them
  // (the zero-point fold accounts for it). int8 weights go as they are, no copy.
  std::vector<int8_t> shifted;
  const auto* w = static_cast<const int8_t*>(weight.data);
  if (weight.type == QType::Uint8) {
    const auto* u8 = static_cast<const uint8_t*>(weight.data);
    shifted.resize(static_cast<size_t>(weight.K * weight.N));
    for (size_t i = 0; i < shifted.size(); ++i) shifted[i] = static_cast<int8_t>(int32_t(u8[i]) - 128);
    w = shifted.data();
  }
  GroupDevice group;
  DeviceWeightStore store(device.opened(), device.share_weights());
  auto gemm = npu::DeviceGemm::create(
      device.device(), device.cache(), static_cast<uint32_t>(weight.K), static_cast<uint32_t>(weight.N), w,
      weight.is_nk ? npu::WeightLayout::kNK : npu::WeightLayout::kKN, device.gemm_options(), store);
  count(counters, Counter::DeviceWeightBytes, store.uploaded_bytes());
  if (!gemm) {
    group.failure = gemm.error().to_string();
    count(counters, Counter::DesignsFailed);
    return group;
  }
  group.gemm = std::move(*gemm);
  count(counters, Counter::DesignsBuilt, group.gemm->setup_stats().designs_built);
  count(counters, Counter::DesignsLoaded, group.gemm->setup_stats().designs_loaded);
  return group;
}

}  // namespace onebit
