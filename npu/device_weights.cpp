// SPDX-License-Identifier: Apache-2.0
#include "npu/device_weights.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "npu/sync_profile.h"

namespace onebit::npu {

Result<DeviceWeights> upload_weights(Device& device, const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N,
                                     const Tiling& tiling) {
  if (w == nullptr) return make_error(ErrorCode::kInvalidArgument, "no weights");
  const std::vector<int8_t> packed = pack_weights_tiled(w, layout, K, N, tiling);
  Result<std::unique_ptr<BufferObject>> bo = device.alloc_bo(packed.size());
  if (!bo) return bo.error();
  DeviceWeights weights{std::move(bo).value(), K, N, tiling};
  std::memcpy(weights.bo->host(), packed.data(), packed.size());
  const auto start = std::chrono::steady_clock::now();
  if (Status s = device.sync(*weights.bo, SyncDirection::kToDevice, 0, packed.size()); !s) return s;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  record_sync(SyncKind::kWToDevice, packed.size(), static_cast<uint64_t>(ns.count()), device.emulated());
  return weights;
}

bool uploaded_from(const DeviceWeights& weights, const int8_t* w, WeightLayout layout, uint32_t K, uint32_t N) {
  return weights.K == K && weights.N == N &&
         packs_to_tiled(reinterpret_cast<const int8_t*>(weights.bo->host()), weights.bo->size(), w, layout, K, N,
                        weights.tiling);
}

WeightStore& own_weights() {
  struct Own final : WeightStore {
    Result<std::shared_ptr<const DeviceWeights>> weights(Device& device, const int8_t* w, WeightLayout layout,
                                                         uint32_t K, uint32_t N, const Tiling& tiling) override {
      Result<DeviceWeights> uploaded = upload_weights(device, w, layout, K, N, tiling);
      if (!uploaded) return uploaded.error();
      return std::make_shared<const DeviceWeights>(std::move(uploaded).value());
    }
  };
  static Own store;
  return store;
}

}  // namespace onebit::npu
