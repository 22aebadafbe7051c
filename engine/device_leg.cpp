// SPDX-License-Identifier: Apache-2.0
#include "engine/device_leg.h"

#include <vector>

#include "kernels/gemm_q8_kernels.h"

namespace onebit {

DeviceCall run_on_device(SessionDevice& device, GroupDevice& group, const PreparedActivation& x,
                         const PackedWeights& weights, int32_t* acc) {
  DeviceCall result;
  npu::Status locked = device.lease().begin_call();
  if (!locked) {
    result.reason = locked.code() == npu::ErrorCode::kBusy ? RouteReason::Busy : RouteReason::Fallback;
    result.error = locked.to_string();
    return result;
  }
  // Activations prepared for a VNNI kernel are held as uint8 (int8 + offset): undo that.
  const int32_t offset = x.int8_offset();
  std::vector<int8_t> a(static_cast<size_t>(x.M * x.K));
  for (int64_t m = 0; m < x.M; ++m)
    for (int64_t k = 0; k < x.K; ++k) a[static_cast<size_t>(m * x.K + k)] = static_cast<int8_t>(x.at(m, k) - offset);
  std::vector<int32_t> dots(static_cast<size_t>(x.M * weights.N));
  const npu::Status ran = group.gemm->run(a.data(), static_cast<uint32_t>(x.M), dots.data(), &result.stats);
  device.lease().end_call();
  if (!ran) {
    result.reason = RouteReason::Fallback;
    result.error = ran.to_string();
    return result;
  }
  for (int64_t m = 0; m < x.M; ++m)
    for (int64_t n = 0; n < weights.N; ++n) {
      const auto i = static_cast<size_t>(m * weights.N + n);
      const auto col = static_cast<size_t>(n);
      const auto row_sum = static_cast<int32_t>(uint32_t(x.row_sum[static_cast<size_t>(m)]) - uint32_t(offset * x.K));
      acc[i] = fold_zero_points(dots[i], weights.zero_point[col], row_sum, x.zero_point - offset, weights.col_sum[col],
                                weights.K);
    }
  return result;
}

}  // namespace onebit
