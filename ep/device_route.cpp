// SPDX-License-Identifier: Apache-2.0
#include "device_route.h"

#include <stdexcept>

#include "kernels/gemm_q8_kernels.h"
#include "npu/design_cache.h"
#include "npu/device_select.h"

namespace onebit {

std::unique_ptr<SessionDevice> SessionDevice::open(const EpOptions& options) {
  auto choice = npu::select_device(options.device);
  if (!choice) throw std::invalid_argument("onebit: device: " + choice.error().to_string());
  if (choice->kind == npu::DeviceKind::kNone) return nullptr;
  auto opened = npu::open_device(choice->kind);
  if (!opened) throw std::invalid_argument("onebit: cannot open device (" + choice->reason + "): " + opened.error().to_string());
  auto policy = npu::lock_policy_from_name(options.device_lock);
  if (!policy) throw std::invalid_argument("onebit: device_lock: " + policy.error().to_string());
  auto session = std::unique_ptr<SessionDevice>(new SessionDevice());
  session->device_ = std::move(*opened);
  session->lease_ = std::make_unique<npu::DeviceLease>(*session->device_, *policy);
  session->cache_ = std::make_unique<npu::DesignCache>(options.designs_dir.empty() ? npu::default_designs_dir()
                                                                                   : options.designs_dir);
  session->gemm_options_.wait_timeout = std::chrono::milliseconds(options.device_timeout_ms);
  return session;
}

SessionDevice::~SessionDevice() {
  lease_.reset();  // releases the lock before the device closes
  if (device_) device_->close();
}

std::string SessionDevice::description() const {
  return std::string(device_->name()) + (device_->emulated() ? " (emulated array)" : "") + ", designs in " +
         cache_->dir() + ", lock per " + npu::lock_policy_name(lease_->policy());
}

GroupDevice prepare_group_device(SessionDevice& device, const PackedWeights& weights, Counters& counters) {
  // The device takes the weights K×N in int8, shifted as the host kernel stores them.
  std::vector<int8_t> w(static_cast<size_t>(weights.K * weights.N));
  for (int64_t k = 0; k < weights.K; ++k)
    for (int64_t n = 0; n < weights.N; ++n) w[static_cast<size_t>(k * weights.N + n)] = weights.at(k, n);
  GroupDevice group;
  auto gemm = npu::DeviceGemm::create(device.device(), device.cache(), static_cast<uint32_t>(weights.K),
                                      static_cast<uint32_t>(weights.N), w.data(), npu::WeightLayout::kKN,
                                      device.gemm_options());
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

const char* route_reason_name(RouteReason reason) {
  switch (reason) {
    case RouteReason::NoDevice: return "no-device";
    case RouteReason::RowsPolicy: return "rows<min_device_rows";
    case RouteReason::Routes: return "routes";
    case RouteReason::DesignsFailed: return "designs-failed";
    case RouteReason::Busy: return "device-busy";
    case RouteReason::Fallback: return "device-fallback";
    case RouteReason::Device: return "device";
  }
  return "";
}

RouteReason choose_route(const SessionDevice* device, const GroupDevice& group, const EpOptions& options,
                         const std::optional<RoutesTable>& routes, int64_t K, int64_t N, int64_t M) {
  if (device == nullptr) return RouteReason::NoDevice;
  if (M < options.min_device_rows) return RouteReason::RowsPolicy;
  if (routes && routes->route(K, N, M) == Route::Host) return RouteReason::Routes;
  if (!group.gemm) return RouteReason::DesignsFailed;
  return RouteReason::Device;
}

DeviceCallResult run_on_device(SessionDevice& device, GroupDevice& group, const PreparedActivation& x,
                               const PackedWeights& weights, int32_t* acc) {
  DeviceCallResult result;
  npu::Status locked = device.lease().begin_call();
  if (!locked) {
    result.reason = locked.code() == npu::ErrorCode::kBusy ? RouteReason::Busy : RouteReason::Fallback;
    result.error = locked.to_string();
    return result;
  }
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
