// SPDX-License-Identifier: Apache-2.0
// The process-wide packed-weight registry: equal weights share one packing, weights that differ
// anywhere the packing reads never do (the read-back comparison decides, not the hash), an entry
// is freed with its last holder, and threads creating and releasing groups at once agree.
#include "engine/shared_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "lockstep_threads.h"
#include "test_operands.h"

namespace onebit {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

bool same_bytes(const PackedWeights& a, const PackedWeights& b) {
  return a.K == b.K && a.N == b.N && a.group == b.group && a.blocks == b.blocks && a.zero_point == b.zero_point &&
         a.col_sum == b.col_sum;
}

constexpr int64_t K = 37, N = 21;  // neither a whole k group nor a whole column block: padding on both sides

TEST(ContentHash, EveryByteCounts) {
  std::vector<uint8_t> a = random_bytes(29, 1);  // a tail of 5 bytes after three words
  const uint64_t h = content_hash(a.data(), a.size());
  EXPECT_EQ(content_hash(a.data(), a.size()), h);
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<uint8_t> b = a;
    b[i] ^= 1;
    EXPECT_NE(content_hash(b.data(), b.size()), h) << "byte " << i;
  }
  EXPECT_NE(content_hash(a.data(), a.size() - 1), h);
  EXPECT_NE(content_hash(a.data(), a.size(), 7), h);
}

TEST(PackRegistry, TheComparisonDecidesUnderOneKey) {
  PackRegistry<std::vector<int>> registry;
  const auto get = [&](std::vector<int> value) {
    return registry.find_or_pack(
        "every value collides", [&](const std::vector<int>& held) { return held == value; }, [&] { return value; });
  };
  auto a = get({1, 2});
  auto b = get({1, 3});
  auto a_again = get({1, 2});
  EXPECT_EQ(a, a_again);
  EXPECT_NE(a, b);
  EXPECT_EQ(*b, (std::vector<int>{1, 3}));
  EXPECT_EQ(registry.live(), 2u);
  a.reset();
  EXPECT_EQ(registry.live(), 2u);  // a_again still holds it
  a_again.reset();
  b.reset();
  EXPECT_EQ(registry.live(), 0u);
}

TEST(SharedPackWeights, EqualWeightsShareOnePacking) {
  const std::vector<uint8_t> w = random_bytes(K * N, 2), copy = w;
  const std::vector<int32_t> zp = {3, 250};
  const size_t before = packed_weights_registry().live();
  auto a = shared_pack_weights(w.data(), QType::Uint8, K, N, false, zp.data(), 1);
  auto b = shared_pack_weights(copy.data(), QType::Uint8, K, N, false, zp.data(), 1);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(same_bytes(*a, pack_weights(w.data(), QType::Uint8, K, N, false, zp.data(), 1)));
  EXPECT_EQ(packed_weights_registry().live(), before + 1);
  const std::weak_ptr<const PackedWeights> watch = a;
  a.reset();
  EXPECT_FALSE(watch.expired());
  b.reset();
  EXPECT_TRUE(watch.expired());  // freed with its last holder
  EXPECT_EQ(packed_weights_registry().live(), before);
}

TEST(SharedPackWeights, AnyDifferenceGetsItsOwnPacking) {
  const std::vector<uint8_t> w = random_bytes(K * N, 3);
  const std::vector<uint8_t> zp_bytes = random_bytes(N, 4);
  const std::vector<int32_t> zp(zp_bytes.begin(), zp_bytes.end());
  auto base = shared_pack_weights(w.data(), QType::Uint8, K, N, true, zp.data(), N);
  for (size_t i : {size_t(0), size_t(K * N / 2), size_t(K * N - 1)}) {
    std::vector<uint8_t> changed = w;
    changed[i] ^= 0x80;
    auto other = shared_pack_weights(changed.data(), QType::Uint8, K, N, true, zp.data(), N);
    EXPECT_NE(other, base) << "byte " << i;
    EXPECT_TRUE(same_bytes(*other, pack_weights(changed.data(), QType::Uint8, K, N, true, zp.data(), N)));
  }
  std::vector<int32_t> zp_changed = zp;
  zp_changed[N - 1] += 1;
  EXPECT_NE(shared_pack_weights(w.data(), QType::Uint8, K, N, true, zp_changed.data(), N), base);
  EXPECT_NE(shared_pack_weights(w.data(), QType::Uint8, K, N, false, zp.data(), N), base);  // read as K×N
  EXPECT_NE(shared_pack_weights(w.data(), QType::Int8, K, N, true, zp.data(), N), base);
  const KGroup other_group = base->group == KGroup::Pairs ? KGroup::Quads : KGroup::Pairs;
  auto regrouped = shared_pack_weights(w.data(), QType::Uint8, K, N, true, zp.data(), N, {}, other_group);
  EXPECT_NE(regrouped, base);
  EXPECT_EQ(regrouped->group, other_group);
  EXPECT_NE(shared_pack_weights(w.data(), QType::Uint8, K, N, true, zp.data(), N, WeightSharing{.in_process = false}),
            base);  // not shared
}

TEST(PacksTo, ReadsBackEveryValueAndZeroPoint) {
  const std::vector<uint8_t> w = random_bytes(K * N, 5);
  for (KGroup group : {KGroup::Pairs, KGroup::Quads}) {
    const PackedWeights p = pack_weights(w.data(), QType::Uint8, K, N, false, nullptr, 0, group);
    EXPECT_TRUE(packs_to(p, w.data(), QType::Uint8, K, N, false, nullptr, 0));
    for (size_t i = 0; i < w.size(); i += 13) {
      std::vector<uint8_t> changed = w;
      changed[i] += 1;
      EXPECT_FALSE(packs_to(p, changed.data(), QType::Uint8, K, N, false, nullptr, 0)) << "byte " << i;
    }
    const int32_t one = 1;
    EXPECT_FALSE(packs_to(p, w.data(), QType::Uint8, K, N, false, &one, 1));
    EXPECT_FALSE(packs_to(p, w.data(), QType::Uint8, N, K, false, nullptr, 0));
    // int8 values v and uint8 values v + 128 with zero points 128 apart pack to the same bytes.
    std::vector<uint8_t> as_int8 = w;
    for (auto& v : as_int8) v = static_cast<uint8_t>(v - 128);
    const int32_t zp_uint8 = 128, zp_int8 = 0;
    const PackedWeights q = pack_weights(w.data(), QType::Uint8, K, N, false, &zp_uint8, 1, group);
    EXPECT_TRUE(packs_to(q, as_int8.data(), QType::Int8, K, N, false, &zp_int8, 1));
  }
}

TEST(PacksTo, AnEmptyKPacksToItself) {  // no bytes to compare (null pointers): the sanitizer job's case
  for (KGroup group : {KGroup::Pairs, KGroup::Quads}) {
    const PackedWeights p = pack_weights(nullptr, QType::Int8, 0, N, false, nullptr, 0, group);
    EXPECT_TRUE(packs_to(p, nullptr, QType::Int8, 0, N, false, nullptr, 0));
    EXPECT_FALSE(packs_to(p, nullptr, QType::Int8, 0, N - 1, false, nullptr, 0));
  }
}

// A MatMulNBits weight as a model stores it; K = 40 leaves 24 padding values in the last block
// (2 blocks of 32).
struct NBits : onebit_test::NBitsModelWeights {
  bool with_zero_points = true;

  NBits()
      : NBitsModelWeights{40,
                          11,
                          4,
                          32,
                          random_bytes(size_t(11 * 2 * 32 * 4 / 8), 6),
                          random_bytes(size_t(11 * 1), 7),  // two 4-bit blocks per byte
                          std::vector<float>(size_t(11 * 2), 0.25f)} {}
  NBitsWeights view() const { return NBitsModelWeights::view(with_zero_points); }
  std::shared_ptr<const PackedNBits> shared() const {
    std::string error;
    auto p = shared_pack_nbits(view(), {}, error);
    EXPECT_EQ(error, "");
    return p;
  }
};

TEST(SharedPackNbits, SharesExactlyWhenThePackedBytesAreEqual) {
  const NBits model;
  auto base = model.shared();
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(NBits(model).shared(), base);
  const std::weak_ptr<const PackedNBits> watch = base;

  // Byte 20 of a column holds k = 40, 41: padding, which packing skips. It is hashed all the same,
  // so it is packed again (a missed share, never a wrong one), to the same bytes.
  NBits padding = model;
  padding.b[20] ^= 0xFF;
  auto padded = padding.shared();
  EXPECT_NE(padded, base);
  EXPECT_EQ(std::vector<uint8_t>(padded->data.begin(), padded->data.end()),
            std::vector<uint8_t>(base->data.begin(), base->data.end()));
  EXPECT_TRUE(packs_to(*base, padding.view()));

  NBits weight = model;
  weight.b[19] ^= 0x10;  // k = 39 of column 0
  NBits scale = model;
  scale.scales.back() = -scale.scales.back();
  NBits zero_scale = model, negative_zero = model;
  zero_scale.scales[3] = 0.0f;
  negative_zero.scales[3] = -0.0f;  // equal as floats, not as bits
  NBits zero_point = model;
  zero_point.zero_points[5] ^= 0x01;
  NBits symmetric = model;  // zero points 8 written out are not the same packing as none
  std::fill(symmetric.zero_points.begin(), symmetric.zero_points.end(), uint8_t(0x88));
  NBits no_zero_points = symmetric;
  no_zero_points.with_zero_points = false;
  for (const NBits* changed : {&weight, &scale, &zero_scale, &zero_point, &symmetric}) {
    auto p = changed->shared();
    EXPECT_NE(p, base);
    PackedNBits own;
    ASSERT_EQ(pack_nbits_weights(changed->view(), own), "");
    EXPECT_EQ(std::vector<uint8_t>(p->data.begin(), p->data.end()),
              std::vector<uint8_t>(own.data.begin(), own.data.end()));
  }
  EXPECT_NE(negative_zero.shared(), zero_scale.shared());
  EXPECT_NE(no_zero_points.shared(), symmetric.shared());

  NBits malformed = model;
  malformed.scales.pop_back();
  std::string error;
  EXPECT_EQ(shared_pack_nbits(malformed.view(), {}, error), nullptr);
  EXPECT_NE(error.find("scales"), std::string::npos) << error;
  base.reset();
  EXPECT_TRUE(watch.expired());
}

// Threads that create and release groups of two weights at once: each gets the right packing,
// holders of one weight at the same moment hold the same packing, and nothing outlives them.
TEST(SharedPackWeights, ConcurrentCreationAndRelease) {
  constexpr int kThreads = 6, kRounds = 40;
  const std::vector<uint8_t> w0 = random_bytes(K * N, 8), w1 = random_bytes(K * N, 9);
  const PackedWeights expected[2] = {pack_weights(w0.data(), QType::Int8, K, N, false, nullptr, 0),
                                     pack_weights(w1.data(), QType::Int8, K, N, false, nullptr, 0)};
  const size_t before = packed_weights_registry().live();
  std::vector<std::shared_ptr<const PackedWeights>> held(kThreads);
  const std::vector<int> failures = run_in_lockstep(
      kThreads, kRounds,
      [&](int t, int round) {
        const int which = (t + round) % 2;
        const std::vector<uint8_t> copy = which == 0 ? w0 : w1;  // a model's own buffer
        held[t] = shared_pack_weights(copy.data(), QType::Int8, K, N, false, nullptr, 0);
        return same_bytes(*held[t], expected[which]) ? 0 : 1;
      },
      [&](int t, int round) {  // holders of one weight hold one packing
        int failed = 0;
        for (int u = 0; u < kThreads; ++u)
          if ((u + round) % 2 == (t + round) % 2) failed += held[u] == held[t] ? 0 : 1;
        return failed;
      },
      [&](int t) { held[t].reset(); });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(packed_weights_registry().live(), before);
}

}  // namespace
}  // namespace onebit
