// SPDX-License-Identifier: Apache-2.0
// huge_page_allocate: small buffers share 2 MiB-aligned chunks without overlapping, keep their bytes
// while others come and go, and large ones start on a huge-page boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/huge_page_allocator.h"

namespace {

constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

struct Buffer {
  uint8_t* p;
  size_t bytes;
  uint8_t seed;
};

Buffer make(size_t bytes, uint8_t seed) {
  auto* p = static_cast<uint8_t*>(onebit::huge_page_allocate(bytes));
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(i * 131 + seed);
  return {p, bytes, seed};
}

bool intact(const Buffer& b) {
  for (size_t i = 0; i < b.bytes; ++i)
    if (b.p[i] != static_cast<uint8_t>(i * 131 + b.seed)) return false;
  return true;
}

TEST(HugePagePool, SmallBuffersShareAlignedChunksAndKeepTheirBytes) {
  std::mt19937 rng(7);
  std::vector<Buffer> live;
  // Sizes like a decoder's projections (110-885 KB), and odd ones: several chunks fill up.
  const size_t sizes[] = {110592, 331776, 884736, 1, 63, 65, 4095, 1 << 20, (2 << 20) - 1};
  for (int round = 0; round < 3; ++round) {
    for (size_t s : sizes) live.push_back(make(s, static_cast<uint8_t>(live.size())));
    std::shuffle(live.begin(), live.end(), rng);
    for (size_t i = 0; i < live.size() / 2; ++i) {  // free half, in random order
      ASSERT_TRUE(intact(live.back()));
      onebit::huge_page_free(live.back().p, live.back().bytes);
      live.pop_back();
    }
  }
  for (const Buffer& b : live) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.p) % 64, 0u);
    EXPECT_TRUE(intact(b)) << b.bytes << " bytes";
    const uintptr_t begin = reinterpret_cast<uintptr_t>(b.p);
    EXPECT_EQ(begin / kHugePage, (begin + b.bytes - 1) / kHugePage) << "a small buffer crosses a chunk";
    for (const Buffer& other : live) {
      if (&other == &b) continue;
      EXPECT_TRUE(b.p + b.bytes <= other.p || other.p + other.bytes <= b.p) << "overlap";
    }
  }
  for (const Buffer& b : live) onebit::huge_page_free(b.p, b.bytes);
}

TEST(HugePagePool, ConsecutiveSmallBuffersShareOneChunk) {
  Buffer a = make(4096, 1), b = make(4096, 2);
  // The second follows the first in its chunk unless the first filled it.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.p) / kHugePage == reinterpret_cast<uintptr_t>(a.p) / kHugePage,
            reinterpret_cast<uintptr_t>(b.p) == reinterpret_cast<uintptr_t>(a.p) + 4096);
  EXPECT_TRUE(intact(a) && intact(b));
  onebit::huge_page_free(a.p, a.bytes);
  onebit::huge_page_free(b.p, b.bytes);
}

TEST(HugePagePool, LargeBuffersStartOnAHugePage) {
  Buffer b = make((5 << 20) + 3, 9);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.p) % kHugePage, 0u);
  EXPECT_TRUE(intact(b));
  onebit::huge_page_free(b.p, b.bytes);
}

TEST(HugePagePool, VectorsUseIt) {
  std::vector<int8_t, onebit::HugePageAllocator<int8_t>> v(1000, 5);
  v.resize(300000, 6);  // reallocates within the pool
  EXPECT_EQ(v[999], 5);
  EXPECT_EQ(v[299999], 6);
}

}  // namespace
