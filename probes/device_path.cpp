// SPDX-License-Identifier: Apache-2.0
#include "probes/device_path.h"

#include <chrono>

#include "npu/design_cache.h"

namespace onebit::probes {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

DevicePath::DevicePath(const ProbeOperands& ops, npu::DeviceKind kind, const std::string& designs_dir,
                       const std::string& lock_path)
    : ops_(ops), designs_dir_(designs_dir.empty() ? npu::default_designs_dir() : designs_dir) {
  npu::DeviceOptions device_options;
  if (!lock_path.empty()) device_options.lock_path = lock_path;
  npu::Result<std::unique_ptr<npu::Device>> device = npu::open_device(kind, device_options);
  if (!device) {
    error_ = device.error().to_string();
    return;
  }
  device_ = std::move(device).value();
  // Held for the whole probe: a probe measures the device, not the contention for it.
  if (npu::Status s = device_->try_lock(); !s) {
    error_ = s.to_string();
    return;
  }
  const auto start = Clock::now();
  npu::GemmOptions gemm_options;
  gemm_options.initial_rows = ops.max_rows + 32;  // BOs sized once: no growth inside a timed call
  npu::Result<std::unique_ptr<npu::DeviceGemm>> gemm = npu::DeviceGemm::create(
      *device_, npu::DesignCache(designs_dir_), ops.K, ops.N, ops.w.data(), npu::WeightLayout::kKN, gemm_options);
  setup_ms_ = ms_between(start, Clock::now());
  if (!gemm) {
    error_ = gemm.error().to_string();
    return;
  }
  gemm_ = std::move(gemm).value();
  dots_.resize(size_t(ops.max_rows) * ops.N);
  out_.resize(size_t(ops.max_rows) * ops.N);
}

DevicePath::~DevicePath() {
  gemm_.reset();
  if (device_) device_->close();  // also drops the lock
}

std::string DevicePath::name() const { return device_ ? std::string(device_->name()) : std::string(); }
bool DevicePath::emulated() const { return device_ && device_->emulated(); }

bool DevicePath::call(uint32_t rows, DeviceCallTiming& timing) {
  timing = DeviceCallTiming{};
  const auto start = Clock::now();
  npu::Status s = gemm_->run(ops_.a.data(), rows, dots_.data(), &timing.stats);
  const auto ran = Clock::now();
  if (!s) {
    error_ = s.to_string();
    return false;
  }
  // Zero points are 0, so the folded accumulators are the dot products themselves: the EP's
  // fold step has nothing to do and the epilogue reads them directly.
  ops_.epilogue.apply(dots_.data(), rows, ops_.N, out_.data());
  const auto done = Clock::now();
  timing.total_ms = ms_between(start, done);
  timing.upload_ms = timing.stats.upload_ms;
  timing.launch_wait_ms = timing.stats.launch_wait_ms;
  timing.c_sync_ms = timing.stats.c_sync_ms;
  timing.epilogue_ms = ms_between(ran, done);
  return true;
}

}  // namespace onebit::probes
