// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/emu_device.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/checksum.h"
#include "npu/emu/design_program.h"
#include "npu/emu/emu_interpreter.h"
#include "npu/emu/failure_injection.h"
#include "npu/weight_layout.h"

namespace onebit::npu {

namespace {

using Memory = std::shared_ptr<std::vector<uint8_t>>;
struct EmuArray;

class EmuLoadedDesign final : public LoadedDesign {
 public:
  EmuLoadedDesign(const EmuArray* owner, DesignInfo info, std::vector<Instruction> program)
      : owner_(owner), info_(info), program_(std::move(program)) {}
  const DesignInfo& info() const override { return info_; }
  const std::vector<Instruction>& program() const { return program_; }
  const EmuArray* owner() const { return owner_; }

 private:
  const EmuArray* owner_;
  DesignInfo info_;
  std::vector<Instruction> program_;
};

class EmuRun final : public Run {
 public:
  // What the worker needs, captured at launch (shared, so a BO freed meanwhile stays valid).
  const EmuArray* owner = nullptr;
  std::shared_ptr<const EmuLoadedDesign> design;
  Memory a, w, c;
  size_t a_offset = 0, c_offset = 0;
  bool stall = false;  // injected timeout: sit on the array until cancelled

  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Status status;

  void finish(Status s) {
    {
      std::lock_guard<std::mutex> guard(mutex);
      status = std::move(s);
      done = true;
    }
    cv.notify_all();
  }
};

// The array: device memory, loaded designs' owner, and the worker that executes runs.
struct EmuArray {
  std::mutex mutex;
  bool open = true;
  uint64_t next_bo = 1;
  std::unordered_map<uint64_t, Memory> memory;

  std::condition_variable queue_cv;
  std::deque<std::shared_ptr<EmuRun>> queue;
  bool stopping = false;
  std::thread worker;

  Memory find(uint64_t id) {
    std::lock_guard<std::mutex> guard(mutex);
    auto it = memory.find(id);
    return it == memory.end() ? nullptr : it->second;
  }

  void work() {
    for (;;) {
      std::shared_ptr<EmuRun> run;
      {
        std::unique_lock<std::mutex> lock(mutex);
        queue_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        run = queue.front();
        queue.pop_front();
      }
      execute(*run);
    }
  }

  static void execute(EmuRun& run) {
    if (run.stall) {
      std::unique_lock<std::mutex> lock(run.mutex);
      run.cv.wait(lock, [&] { return run.cancel.load(); });
    }
    if (run.cancel.load()) {
      run.finish(make_error(ErrorCode::kTimeout, "run cancelled"));
      return;
    }
    const DesignInfo& info = run.design->info();
    EmuLaunchMemory view;
    view.a = reinterpret_cast<const int8_t*>(run.a->data() + run.a_offset);
    view.a_bytes = run.a->size() - run.a_offset;
    view.w = reinterpret_cast<const int8_t*>(run.w->data());
    view.w_bytes = run.w->size();
    view.c = run.c->data() + run.c_offset;
    view.c_bytes = run.c->size() - run.c_offset;
    run.finish(execute_program(run.design->program(), info, view, run.cancel));
  }
};

class EmuBo final : public BufferObject {
 public:
  EmuBo(std::shared_ptr<EmuArray> array, uint64_t id, size_t bytes)
      : array_(std::move(array)), id_(id), host_(new uint8_t[bytes == 0 ? 1 : bytes]()), size_(bytes) {}
  ~EmuBo() override {
    std::lock_guard<std::mutex> guard(array_->mutex);
    array_->memory.erase(id_);
  }
  uint8_t* host() override { return host_.get(); }
  size_t size() const override { return size_; }
  const EmuArray* owner() const { return array_.get(); }
  uint64_t id() const { return id_; }

 private:
  std::shared_ptr<EmuArray> array_;
  uint64_t id_;
  std::unique_ptr<uint8_t[]> host_;
  size_t size_;
};

Error unavailable() { return make_error(ErrorCode::kUnavailable, "emu device is closed"); }

class EmuDevice final : public Device {
 public:
  explicit EmuDevice(const EmuDeviceOptions& options) : array_(std::make_shared<EmuArray>()), lock_(options.lock_path) {
    array_->worker = std::thread([array = array_.get()] { array->work(); });
  }
  ~EmuDevice() override { close(); }

  std::string_view name() const override { return "emu"; }
  Target target() const override { return Target::kEmu; }
  bool emulated() const override { return true; }

  void close() override {
    std::vector<std::shared_ptr<EmuRun>> pending;
    {
      std::lock_guard<std::mutex> guard(array_->mutex);
      if (!array_->open) return;
      array_->open = false;
      array_->stopping = true;
      pending.assign(array_->queue.begin(), array_->queue.end());
      array_->memory.clear();  // runs in flight keep their own references
    }
    for (auto& run : pending) run->cancel = true;
    array_->queue_cv.notify_all();
    // A stalled run in execution waits on its own cv; wake it too.
    {
      std::lock_guard<std::mutex> guard(running_mutex_);
      for (auto& weak : launched_)
        if (auto run = weak.lock()) {
          run->cancel = true;
          std::lock_guard<std::mutex> run_guard(run->mutex);  // no lost wake-up of a stalled run
          run->cv.notify_all();
        }
      launched_.clear();
    }
    if (array_->worker.joinable()) array_->worker.join();
    std::lock_guard<std::mutex> guard(lock_mutex_);
    lock_.unlock();
  }

  Status try_lock() override {
    if (!is_open()) return unavailable();
    std::lock_guard<std::mutex> guard(lock_mutex_);
    return lock_.try_lock();
  }
  void unlock() override {
    std::lock_guard<std::mutex> guard(lock_mutex_);
    lock_.unlock();
  }
  bool locked() const override {
    std::lock_guard<std::mutex> guard(lock_mutex_);
    return lock_.held();
  }

  Result<std::unique_ptr<BufferObject>> alloc_bo(size_t bytes) override {
    std::lock_guard<std::mutex> guard(array_->mutex);
    if (!array_->open) return unavailable();
    const uint64_t id = array_->next_bo++;
    // Device memory starts as garbage-free zeros; it only changes by sync or by a run.
    array_->memory.emplace(id, std::make_shared<std::vector<uint8_t>>(bytes, 0));
    return std::unique_ptr<BufferObject>(new EmuBo(array_, id, bytes));
  }

  Status sync(BufferObject& bo, SyncDirection direction, size_t offset, size_t bytes) override {
    auto* emu_bo = dynamic_cast<EmuBo*>(&bo);
    if (emu_bo == nullptr || emu_bo->owner() != array_.get())
      return make_error(ErrorCode::kSync, "BO does not belong to this emu device");
    if (offset > bo.size() || bytes > bo.size() - offset)
      return make_error(ErrorCode::kSync, "sync range [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                                              ") outside the " + std::to_string(bo.size()) + "-byte BO");
    Memory device_memory = array_->find(emu_bo->id());
    if (!device_memory) return unavailable();
    if (direction == SyncDirection::kToDevice)
      std::memcpy(device_memory->data() + offset, bo.host() + offset, bytes);
    else
      std::memcpy(bo.host() + offset, device_memory->data() + offset, bytes);
    return {};
  }

  Result<std::shared_ptr<LoadedDesign>> load_design(const Design& design) override {
    if (!is_open()) return unavailable();
    const std::string what = "design " + design.info.key().to_string() + ": ";
    if (injected_failure() == InjectedFailure::kDesign)
      return make_error(ErrorCode::kDesign, what + "injected design load failure (ONEBIT_NPU_FAIL=design)");
    if (design.info.target != Target::kEmu)
      return make_error(ErrorCode::kDesign,
                        what + "built for target " + target_name(design.info.target) + ", this device runs emu");
    if (fnv1a64(design.program.data(), design.program.size()) != design.info.program_checksum)
      return make_error(ErrorCode::kDesign, what + "program checksum mismatch");
    Result<std::vector<Instruction>> program = decode_program(design.program, design.info);
    if (!program) return make_error(ErrorCode::kDesign, what + program.error().reason);
    return std::shared_ptr<LoadedDesign>(
        std::make_shared<EmuLoadedDesign>(array_.get(), design.info, std::move(program).value()));
  }

  Result<RunHandle> launch(const LaunchArgs& args) override {
    if (!is_open()) return unavailable();
    if (injected_failure() == InjectedFailure::kLaunch)
      return make_error(ErrorCode::kLaunch, "injected launch failure (ONEBIT_NPU_FAIL=launch)");
    auto* design = dynamic_cast<const EmuLoadedDesign*>(args.design);
    auto* a = dynamic_cast<EmuBo*>(args.a);
    auto* w = dynamic_cast<EmuBo*>(args.w);
    auto* c = dynamic_cast<EmuBo*>(args.c);
    if (design == nullptr || design->owner() != array_.get())
      return make_error(ErrorCode::kLaunch, "design not loaded on this emu device");
    if (a == nullptr || w == nullptr || c == nullptr || a->owner() != array_.get() || w->owner() != array_.get() ||
        c->owner() != array_.get())
      return make_error(ErrorCode::kLaunch, "a BO does not belong to this emu device");
    const DesignInfo& info = design->info();
    const size_t a_need = size_t(info.m_block) * info.K, c_need = size_t(info.m_block) * info.N * 4;
    if (args.a_offset > a->size() || a_need > a->size() - args.a_offset)
      return make_error(ErrorCode::kLaunch,
                        "A BO too small for m_block rows at offset " + std::to_string(args.a_offset));
    if (args.c_offset % 4 != 0 || args.c_offset > c->size() || c_need > c->size() - args.c_offset)
      return make_error(ErrorCode::kLaunch,
                        "C BO too small or misaligned for m_block rows at offset " + std::to_string(args.c_offset));
    if (w->size() < packed_weight_bytes(info.K, info.N, info.tiling))
      return make_error(ErrorCode::kLaunch, "W BO smaller than the design's packed weights");

    auto run = std::make_shared<EmuRun>();
    run->owner = array_.get();
    // The run keeps its own copy of the (small) decoded design, so it does not depend on the
    // caller keeping the LoadedDesign alive until the run ends.
    run->design = std::make_shared<const EmuLoadedDesign>(*design);
    run->a = array_->find(a->id());
    run->w = array_->find(w->id());
    run->c = array_->find(c->id());
    run->a_offset = args.a_offset;
    run->c_offset = args.c_offset;
    run->stall = injected_failure() == InjectedFailure::kTimeout;
    if (!run->a || !run->w || !run->c) return unavailable();
    {
      std::lock_guard<std::mutex> guard(array_->mutex);
      if (!array_->open) return unavailable();
      array_->queue.push_back(run);
    }
    {
      std::lock_guard<std::mutex> guard(running_mutex_);
      std::erase_if(launched_, [](const std::weak_ptr<EmuRun>& r) { return r.expired(); });
      launched_.push_back(run);
    }
    array_->queue_cv.notify_one();
    return RunHandle(run);
  }

  Status wait(const RunHandle& handle, std::chrono::milliseconds timeout) override {
    auto* run = dynamic_cast<EmuRun*>(handle.get());
    if (run == nullptr || run->owner != array_.get())
      return make_error(ErrorCode::kLaunch, "run does not belong to this emu device");
    std::unique_lock<std::mutex> lock(run->mutex);
    // A system_clock deadline waits with pthread_cond_timedwait; steady_clock would bind to
    // pthread_cond_clockwait (glibc 2.30+), and the EP must load on the glibc ORT needs (2.28).
    if (!run->cv.wait_until(lock, std::chrono::system_clock::now() + timeout, [&] { return run->done; }))
      return make_error(ErrorCode::kTimeout, "run did not finish within " + std::to_string(timeout.count()) + " ms");
    return run->status;
  }

  void cancel(const RunHandle& handle) override {
    auto* run = dynamic_cast<EmuRun*>(handle.get());
    if (run == nullptr || run->owner != array_.get()) return;
    run->cancel = true;
    std::unique_lock<std::mutex> lock(run->mutex);
    run->cv.notify_all();
    run->cv.wait(lock, [&] { return run->done; });
  }

 private:
  bool is_open() const {
    std::lock_guard<std::mutex> guard(array_->mutex);
    return array_->open;
  }

  std::shared_ptr<EmuArray> array_;
  mutable std::mutex lock_mutex_;
  DeviceLock lock_;
  std::mutex running_mutex_;
  std::vector<std::weak_ptr<EmuRun>> launched_;
};

}  // namespace

Result<std::unique_ptr<Device>> open_emu_device(const EmuDeviceOptions& options) {
  return std::unique_ptr<Device>(new EmuDevice(options));
}

}  // namespace onebit::npu
