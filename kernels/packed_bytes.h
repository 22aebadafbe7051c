// SPDX-License-Identifier: Apache-2.0
// The bytes of packed weights: either owned (packed in this process, on huge pages) or a read-only
// view of memory something else keeps alive (a packed-weights cache file mapped by every process
// that uses it, engine/packed_cache.h). The kernels read data() and size() either way; packing
// fills an `Owned` vector and moves it in.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/huge_page_allocator.h"

namespace onebit {

// The version of the packed layouts (PackedWeights in gemm_q8.h, PackedNBits in gemm_w4a8.h): bump
// it with any change to either, so that cache files of the old layout are repacked, never read.
constexpr uint32_t kPackedLayoutVersion = 1;

template <typename T>
class PackedBytes {
 public:
  using Owned = std::vector<T, HugePageAllocator<T>>;
  using value_type = T;
  using const_iterator = const T*;
  using iterator = const T*;

  PackedBytes() = default;
  explicit PackedBytes(Owned owned) : owned_(std::move(owned)) {}
  // `size` values at `view`, valid while `keeper` lives (a file mapping).
  PackedBytes(std::shared_ptr<const void> keeper, const T* view, size_t size)
      : keeper_(std::move(keeper)), view_(view), view_size_(size) {}

  const T* data() const { return keeper_ ? view_ : owned_.data(); }
  size_t size() const { return keeper_ ? view_size_ : owned_.size(); }
  const T& operator[](size_t i) const { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  // Whether the bytes are a view of memory kept by someone else (a mapped cache file).
  bool is_view() const { return keeper_ != nullptr; }

  bool operator==(const PackedBytes& other) const { return std::equal(begin(), end(), other.begin(), other.end()); }

 private:
  Owned owned_;
  std::shared_ptr<const void> keeper_;
  const T* view_ = nullptr;
  size_t view_size_ = 0;
};

}  // namespace onebit
