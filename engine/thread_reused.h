// SPDX-License-Identifier: Apache-2.0
// Scratch a call reuses from the previous call on the same thread instead of allocating (and
// zeroing) it again: the accumulators, a quantized activation, a per-call epilogue. At M = 1
// those allocations cost as much as a small shape's kernel.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>

#include "kernels/gemm_q8.h"

namespace onebit {

// Blocks above this are released when the call ends, so one huge call does not pin its memory
// for the thread's lifetime (the same bound as the device buffers').
constexpr size_t kKeptScratchBytes = size_t(64) << 20;

// n elements of a trivial T, left uninitialised (every user writes before it reads).
template <class T>
class UninitBuffer {
 public:
  T* get(size_t n) {
    if (n > capacity_) {
      // Emptied first, so that a growth that throws leaves an empty buffer, never a null one
      // that still claims the old capacity (the next, smaller call would write through null).
      data_.reset();
      capacity_ = 0;
      data_.reset(new T[n]);
      capacity_ = n;
    }
    return data_.get();
  }
  void trim() {
    if (capacity_ * sizeof(T) > kKeptScratchBytes) *this = UninitBuffer{};
  }

 private:
  std::unique_ptr<T[]> data_;
  size_t capacity_ = 0;
};

// This thread's T for the length of a lease. A second lease of the same T on the same thread
// while the first is held (not done today) gets a T of its own rather than sharing it.
template <class T>
class ThreadReused {
 public:
  ThreadReused() {
    Slot& s = slot();
    if (s.in_use) {
      held_ = &own_.emplace();
    } else {
      s.in_use = true;
      held_ = &s.value;
    }
  }
  ~ThreadReused() {
    Slot& s = slot();
    if (held_ != &s.value) return;
    if constexpr (requires(T& t) { t.trim(); }) s.value.trim();
    s.in_use = false;
  }
  ThreadReused(const ThreadReused&) = delete;
  ThreadReused& operator=(const ThreadReused&) = delete;

  T& operator*() { return *held_; }
  T* operator->() { return held_; }

 private:
  struct Slot {
    T value;
    bool in_use = false;
  };
  static Slot& slot() {
    thread_local Slot s;
    return s;
  }
  T* held_ = nullptr;
  std::optional<T> own_;
};

// This thread's prepared activation, its storage kept from call to call unless it grew huge.
struct ReusedActivation {
  PreparedActivation a;
  void trim() {
    if (a.quads.capacity() + 2 * a.pairs.capacity() > kKeptScratchBytes) a = PreparedActivation{};
  }
};

}  // namespace onebit
