// SPDX-License-Identifier: Apache-2.0
#include "npu/device_gemm.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>

#include "base/checksum.h"
#include "npu/design_check.h"
#include "npu/sync_profile.h"

namespace onebit::npu {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

uint64_t ns_since(Clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

}  // namespace

Result<std::unique_ptr<DeviceGemm>> DeviceGemm::create(Device& device, const DesignSource& source, uint32_t K,
                                                       uint32_t N, const int8_t* w, WeightLayout layout,
                                                       const GemmOptions& options, WeightStore& store) {
  std::vector<Design> designs;
  uint32_t built = 0;
  try {
    for (uint32_t m_block : options.block_sizes) {
      Result<CachedDesign> cached = source.get({device.target(), K, N, m_block});
      if (!cached) return cached.error();
      built += cached->built ? 1 : 0;
      designs.push_back(std::move(cached->design));
    }
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kInternal, "out of memory reading designs");
  }
  Result<std::unique_ptr<DeviceGemm>> gemm = create_from_designs(device, designs, w, layout, options, store);
  if (gemm) (*gemm)->setup_.designs_built = built;
  return gemm;
}

Result<std::unique_ptr<DeviceGemm>> DeviceGemm::create_from_designs(Device& device, const std::vector<Design>& designs,
                                                                    const int8_t* w, WeightLayout layout,
                                                                    const GemmOptions& options,
                                                                    WeightStore& store) try {
  if (designs.empty()) return make_error(ErrorCode::kInvalidArgument, "no designs (empty block_sizes?)");
  if (w == nullptr) return make_error(ErrorCode::kInvalidArgument, "no weights");
  const DesignInfo& first = designs.front().info;
  std::unique_ptr<DeviceGemm> gemm(new DeviceGemm(device, options));
  gemm->K_ = first.K;
  gemm->N_ = first.N;
  gemm->tiling_ = first.tiling;
  for (const Design& d : designs) {
    const DesignInfo& info = d.info;
    if (info.target != device.target())
      return make_error(ErrorCode::kDesign, "design " + info.key().to_string() + " is not for this device's target " +
                                                target_name(device.target()));
    if (info.K != first.K || info.N != first.N || !(info.tiling == first.tiling))
      return make_error(ErrorCode::kDesign, "designs " + first.key().to_string() + " and " + info.key().to_string() +
                                                " differ in shape or weight tiling");
    if (std::find(gemm->block_sizes_.begin(), gemm->block_sizes_.end(), info.m_block) != gemm->block_sizes_.end())
      return make_error(ErrorCode::kInvalidArgument, "two designs for m_block " + std::to_string(info.m_block));
    Result<std::shared_ptr<LoadedDesign>> loaded = device.load_design(d);
    if (!loaded) return loaded.error();
    gemm->block_sizes_.push_back(info.m_block);
    gemm->designs_.push_back(std::move(loaded).value());
  }
  if (Status s = check_designs_compute(device, designs, gemm->designs_, options.wait_timeout); !s) return s;
  gemm->setup_.designs_loaded = static_cast<uint32_t>(designs.size());
  if (options.cost_model)
    gemm->options_.launch_cost_rows = launch_cost_rows(*options.cost_model, first.K, first.N, gemm->block_sizes_);

  // Weights: packed into the designs' layout, uploaded once (by the store's first user).
  const auto start = Clock::now();
  Result<std::shared_ptr<const DeviceWeights>> weights =
      store.weights(device, w, layout, first.K, first.N, first.tiling);
  if (!weights) return weights.error();
  gemm->weights_ = std::move(weights).value();
  if (gemm->weights_->K != first.K || gemm->weights_->N != first.N || !(gemm->weights_->tiling == first.tiling))
    return make_error(ErrorCode::kInternal, "the weight store returned weights of another shape or tiling");
  gemm->setup_.weight_bytes = gemm->weights_->bo->size();
  gemm->setup_.weight_upload_ms = ms_since(start);

  if (options.initial_rows > 0) {
    if (Status s = gemm->ensure_capacity(options.initial_rows); !s) return s;
  }
  return gemm;
} catch (const std::bad_alloc&) {
  return make_error(ErrorCode::kInternal, "out of memory setting up the device GEMM");
}

Status DeviceGemm::ensure_capacity(uint32_t rows) {
  if (rows <= capacity_rows_) return {};
  Result<std::unique_ptr<BufferObject>> a = device_.alloc_bo(size_t(rows) * K_);
  if (!a) return a.status();
  Result<std::unique_ptr<BufferObject>> c = device_.alloc_bo(size_t(rows) * N_ * 4);
  if (!c) return c.status();
  a_bo_ = std::move(a).value();
  c_bo_ = std::move(c).value();
  capacity_rows_ = rows;
  return {};
}

Status DeviceGemm::run(const int8_t* a, uint32_t rows, int32_t* c, CallStats* stats) try {
  // One deadline for the whole call, the wait behind this shape's earlier calls included: a
  // queued call never waits longer than its own timeout. (A system_clock deadline waits with
  // pthread_cond_timedwait; steady_clock, or a timed mutex, would bind symbols newer than the
  // glibc ORT needs.)
  const auto deadline = Clock::now() + options_.wait_timeout;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!idle_.wait_until(lock, std::chrono::system_clock::now() + options_.wait_timeout, [&] { return !running_; }))
      return make_error(ErrorCode::kTimeout, "waited " + std::to_string(options_.wait_timeout.count()) +
                                                 " ms behind earlier calls of this shape; not run on the device");
    running_ = true;
  }
  struct Done {
    DeviceGemm& gemm;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(gemm.mutex_);
        gemm.running_ = false;
      }
      gemm.idle_.notify_one();
    }
  } done{*this};
  CallStats local;
  CallStats& s = stats != nullptr ? *stats : local;
  s = CallStats{};
  s.rows = rows;
  s.emulated = device_.emulated();
  if (rows == 0) return {};
  if (a == nullptr || c == nullptr) return make_error(ErrorCode::kInvalidArgument, "null A or C");
  Status ran = run_locked(a, rows, c, s, deadline);
  // A rare huge call must not pin its buffers (host and device copies) for the session's life.
  if (size_t(capacity_rows_) * (K_ + size_t(N_) * 4) > kRetainedBufferBytes) {
    a_bo_.reset();
    c_bo_.reset();
    capacity_rows_ = 0;
  }
  return ran;
} catch (const std::bad_alloc&) {
  return make_error(ErrorCode::kInternal, "out of memory in a device call");
}

Status DeviceGemm::run_locked(const int8_t* a, uint32_t rows, int32_t* c, CallStats& s, Clock::time_point deadline) {
  const std::vector<BlockLaunch> plan = plan_blocks(rows, block_sizes_, options_.launch_cost_rows);
  const uint32_t computed = planned_rows(plan);
  if (Status st = ensure_capacity(computed); !st) return st;
  s.padded_rows = computed - rows;

  // A: only the rows used. Padding rows of the last block read whatever the device copy holds;
  // their C rows are never read.
  auto t = Clock::now();
  const size_t a_bytes = size_t(rows) * K_;
  std::memcpy(a_bo_->host(), a, a_bytes);
  if (Status st = device_.sync(*a_bo_, SyncDirection::kToDevice, 0, a_bytes); !st) return st;
  record_sync(SyncKind::kAToDevice, a_bytes, ns_since(t), s.emulated);
  s.a_bytes_synced = a_bytes;
  s.upload_ms = ms_since(t);

  // Launch every block, then wait for all of them within one deadline.
  t = Clock::now();
  std::vector<RunHandle> runs;
  auto cancel_all = [&] {
    for (const RunHandle& r : runs) device_.cancel(r);
  };
  for (const BlockLaunch& block : plan) {
    const size_t which =
        size_t(std::find(block_sizes_.begin(), block_sizes_.end(), block.m_block) - block_sizes_.begin());
    LaunchArgs args;
    args.design = designs_[which].get();
    args.a = a_bo_.get();
    args.a_offset = size_t(block.row_begin) * K_;
    args.w = weights_->bo.get();
    args.c = c_bo_.get();
    args.c_offset = size_t(block.row_begin) * N_ * 4;
    Result<RunHandle> run = device_.launch(args);
    if (!run) {
      cancel_all();
      return run.status();
    }
    runs.push_back(std::move(run).value());
    ++s.launches;
  }
  for (const RunHandle& r : runs) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (Status st = device_.wait(r, std::max(left, std::chrono::milliseconds(0))); !st) {
      cancel_all();
      if (st.code() == ErrorCode::kTimeout)
        return make_error(ErrorCode::kTimeout, std::to_string(runs.size()) + " launch(es) did not finish within " +
                                                   std::to_string(options_.wait_timeout.count()) + " ms; cancelled");
      return st;
    }
  }
  s.launch_wait_ms = ms_since(t);

  // C: narrowed to the rows the host reads, unless ONEBIT_NPU_NO_C_NARROW / ONEBIT_NPU_DBG.
  t = Clock::now();
  const size_t c_read = size_t(rows) * N_ * 4;
  const size_t c_bytes = options_.sync.c_sync_bytes(rows, N_, c_bo_->size());
  s.c_whole = options_.sync.whole_c();
  if (Status st = device_.sync(*c_bo_, SyncDirection::kFromDevice, 0, c_bytes); !st) return st;
  record_sync(s.c_whole ? SyncKind::kCFromDeviceWhole : SyncKind::kCFromDeviceNarrowed, c_bytes, ns_since(t),
              s.emulated);
  s.c_bytes_synced = c_bytes;
  if (options_.sync.debug_checksum) {
    s.c_checksum = fnv1a64(c_bo_->host(), c_bytes);
    std::fprintf(stderr, "onebit-npu dbg: %ux%u rows=%u C whole-BO sync %zu bytes checksum %016" PRIx64 "\n", K_, N_,
                 rows, c_bytes, s.c_checksum);
  }
  std::memcpy(c, c_bo_->host(), c_read);
  s.c_sync_ms = ms_since(t);
  if (options_.cost_model) s.modelled = model_call(*options_.cost_model, {K_, N_, tiling_, plan, a_bytes, c_bytes});
  return {};
}

}  // namespace onebit::npu
