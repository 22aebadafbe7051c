// SPDX-License-Identifier: Apache-2.0
// The device interface the EP talks to. Backends (emu here; xrt for real XDNA hardware later)
// implement it. Model: host-visible buffer objects (BOs) whose device-side copy is only
// updated by an explicit sync in a direction, designs loaded once, launches queued on the
// array and waited for with a timeout.
//
// A backend is opened by its factory (open_device in device_select.h, open_emu_device) and
// closed by close() or its destructor. Errors are status-style (error.h); nothing here throws to
// the caller. Backends are thread-safe; BOs and loaded designs may outlive the Device object
// (operations on them then fail with kUnavailable).
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/error.h"
#include "npu/design.h"

namespace onebit::npu {

enum class SyncDirection { kToDevice, kFromDevice };

// A buffer object: host memory the caller reads and writes, with a device-side copy.
class BufferObject {
 public:
  virtual ~BufferObject() = default;
  virtual uint8_t* host() = 0;
  virtual size_t size() const = 0;
};

// A design loaded on the device, ready to launch.
class LoadedDesign {
 public:
  virtual ~LoadedDesign() = default;
  virtual const DesignInfo& info() const = 0;
};

// One launch of a design over m_block rows: A rows from a_offset (m_block × K int8), the packed
// weights, C rows to c_offset (m_block × N int32). Offsets are in bytes.
struct LaunchArgs {
  const LoadedDesign* design = nullptr;
  BufferObject* a = nullptr;
  size_t a_offset = 0;
  BufferObject* w = nullptr;
  BufferObject* c = nullptr;
  size_t c_offset = 0;
};

// A launched run; wait() on it.
class Run {
 public:
  virtual ~Run() = default;
};
using RunHandle = std::shared_ptr<Run>;

class Device {
 public:
  virtual ~Device() = default;

  virtual std::string_view name() const = 0;  // backend name: "emu", "xrt"
  virtual Target target() const = 0;          // the design target it runs
  // True when timings are those of an emulator; print them labelled as such.
  virtual bool emulated() const = 0;

  // Releases BOs' device memory, drains the queue and drops the lock. Idempotent.
  virtual void close() = 0;

  // Cross-process exclusive use of the array. Never blocks: fails with kBusy (reason names the
  // holder) when another process holds it; ok if this Device already holds it.
  virtual Status try_lock() = 0;
  virtual void unlock() = 0;
  virtual bool locked() const = 0;

  virtual Result<std::unique_ptr<BufferObject>> alloc_bo(size_t bytes) = 0;
  // Copies exactly [offset, offset + bytes) between the BO's host memory and its device copy.
  virtual Status sync(BufferObject& bo, SyncDirection direction, size_t offset, size_t bytes) = 0;

  virtual Result<std::shared_ptr<LoadedDesign>> load_design(const Design& design) = 0;
  // Queues a run; runs execute in launch order.
  virtual Result<RunHandle> launch(const LaunchArgs& args) = 0;
  // Ok when the run finished; kLaunch when it faulted; kTimeout when it did not finish in time
  // (the run keeps going: cancel() it before reusing its BOs).
  virtual Status wait(const RunHandle& run, std::chrono::milliseconds timeout) = 0;
  // Stops a run and returns once the array no longer touches its BOs.
  virtual void cancel(const RunHandle& run) = 0;
};

}  // namespace onebit::npu
