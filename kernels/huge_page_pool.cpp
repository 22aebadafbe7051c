// SPDX-License-Identifier: Apache-2.0
// huge_page_allocate: buffers of 2 MiB or more get huge-page-aligned memory of their own; smaller
// ones are carved, one after the other, from shared 2 MiB chunks, each freed when the last buffer
// in it is (and it is no longer the one being filled). A chunk is found from a buffer's address by
// rounding down, since chunks are 2 MiB aligned.
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "kernels/huge_page_allocator.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace onebit {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kAlignment = 64;  // a cache line: the kernels' loads never straddle two

void* aligned_huge(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, bytes) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
  return p;
}

class ChunkPool {
 public:
  void* allocate(size_t bytes) {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    std::lock_guard<std::mutex> lock(mutex_);
    if (current_ == 0 || used_ + rounded > kHugePage) {
      const uintptr_t previous = current_;
      current_ = reinterpret_cast<uintptr_t>(aligned_huge(kHugePage));
      used_ = 0;
      live_[current_] = 0;
      if (previous != 0) release_if_empty(previous);
    }
    void* p = reinterpret_cast<void*>(current_ + used_);
    used_ += rounded;
    ++live_[current_];
    return p;
  }

  void free(void* p) {
    const uintptr_t chunk = reinterpret_cast<uintptr_t>(p) & ~(kHugePage - 1);
    std::lock_guard<std::mutex> lock(mutex_);
    --live_[chunk];
    if (chunk != current_) release_if_empty(chunk);
  }

 private:
  void release_if_empty(uintptr_t chunk) {
    auto it = live_.find(chunk);
    if (it->second != 0) return;
    live_.erase(it);
    std::free(reinterpret_cast<void*>(chunk));
  }

  std::mutex mutex_;
  uintptr_t current_ = 0;                       // the chunk being filled
  size_t used_ = 0;                             // its bytes handed out
  std::unordered_map<uintptr_t, size_t> live_;  // chunk -> buffers in it not yet freed
};

// Never destroyed: vectors in static objects may free into it during exit.
ChunkPool& chunk_pool() {
  static ChunkPool* pool = new ChunkPool;
  return *pool;
}

}  // namespace

void* huge_page_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes >= kHugePage) return aligned_huge(bytes);
  return chunk_pool().allocate(bytes);
}

void huge_page_free(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes >= kHugePage) return std::free(p);
  chunk_pool().free(p);
}

}  // namespace onebit
