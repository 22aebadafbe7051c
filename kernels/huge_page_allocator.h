// SPDX-License-Identifier: Apache-2.0
// A std::vector allocator that puts packed weights on transparent huge pages. The weights are
// streamed from memory once per call; with 4 KiB pages the stream takes a TLB miss every 4 KiB and
// the hardware prefetcher stops at each page boundary (huge pages measured faster: BENCHMARKS.md).
// A decoder's projections are mostly far smaller than a huge page (SmolLM2: 110-885 KB), so
// buffers below 2 MiB share huge-page chunks (huge_page_pool.*). Where
// THP is off or in "never" mode the advice is ignored and the memory is ordinary.
#pragma once
#include <cstddef>

namespace onebit {

// Bytes on huge pages where the kernel grants them, 64-byte aligned; throws std::bad_alloc.
void* huge_page_allocate(size_t bytes);
// Gives back what huge_page_allocate(bytes) returned.
void huge_page_free(void* p, size_t bytes) noexcept;

template <typename T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) { return static_cast<T*>(huge_page_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { huge_page_free(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace onebit
