// SPDX-License-Identifier: Apache-2.0
// dynamic_quantize against hand-computed values and a plain one-element-at-a-time reference of
// ONNX's DynamicQuantizeLinear, at sizes around the 8-, 16- and 64-lane blocks, with ±Inf and NaN
// anywhere; quantize_rows_prepared against the same reference, laid out as the kernels read it.
#include "kernels/dynamic_quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace onebit_test {
namespace {

using onebit::dynamic_quantize;

struct Reference {
  float scale;
  int32_t zero_point;
  std::vector<uint8_t> x_q;
};

// QuantizeLinear with r's scale and zero point, one element at a time.
Reference with_values(const std::vector<float>& x, Reference r) {
  for (float v : x) {
    const float q = std::nearbyint(v / r.scale) + static_cast<float>(r.zero_point);
    r.x_q.push_back(std::isnan(q) ? 0 : static_cast<uint8_t>(std::fmin(255.0f, std::fmax(0.0f, q))));
  }
  return r;
}

// ONNX's formula, one element at a time (NaN: scale NaN, zero point 255, values 0).
Reference reference(const std::vector<float>& x) {
  float lo = 0, hi = 0;
  bool nan = false;
  for (float v : x) {
    if (std::isnan(v))
      nan = true;
    else
      lo = std::fmin(lo, v), hi = std::fmax(hi, v);
  }
  if (nan) return {std::numeric_limits<float>::quiet_NaN(), 255, std::vector<uint8_t>(x.size(), 0)};
  Reference r;
  r.scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  float zp = 0.0f - lo / r.scale;
  zp = std::isnan(zp) || zp > 255.0f ? 255.0f : (zp < 0.0f ? 0.0f : zp);
  r.zero_point = static_cast<int32_t>(std::nearbyint(zp));
  return with_values(x, r);
}

void expect_matches_reference(const std::vector<float>& x, const char* what) {
  std::vector<uint8_t> x_q(x.size(), 0xA5);
  const auto q = dynamic_quantize(x.data(), x.size(), x_q.data());
  const Reference r = reference(x);
  if (std::isnan(r.scale))
    EXPECT_TRUE(std::isnan(q.scale)) << what;
  else
    EXPECT_EQ(q.scale, r.scale) << what;
  EXPECT_EQ(q.zero_point, r.zero_point) << what;
  EXPECT_EQ(x_q, r.x_q) << what;
}

TEST(DynamicQuantize, HandComputed) {
  const std::vector<float> x = {-1.0f, 0.0f, 2.0f, 0.5f};
  std::vector<uint8_t> x_q(4);
  const auto q = dynamic_quantize(x.data(), x.size(), x_q.data());
  EXPECT_EQ(q.scale, 3.0f / 255.0f);
  EXPECT_EQ(q.zero_point, 85);                              // 1 / (3/255) = 85
  EXPECT_EQ(x_q, (std::vector<uint8_t>{0, 85, 255, 127}));  // 0.5 / float(3/255) = 42.4999... -> 42, + 85
}

TEST(DynamicQuantize, AllZeroGivesScaleOne) {
  const std::vector<float> x(13, 0.0f);
  std::vector<uint8_t> x_q(13, 7);
  const auto q = dynamic_quantize(x.data(), x.size(), x_q.data());
  EXPECT_EQ(q.scale, 1.0f);
  EXPECT_EQ(q.zero_point, 0);
  EXPECT_EQ(x_q, std::vector<uint8_t>(13, 0));
}

TEST(DynamicQuantize, RandomSizesAroundLaneBlocks) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.3f, 2.0f);
  for (size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000}) {
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    expect_matches_reference(x, "random");
    for (float& v : x) v = std::fabs(v) + 1.0f;  // a range without 0
    expect_matches_reference(x, "all positive");
    for (float& v : x) v = -v;
    expect_matches_reference(x, "all negative");
  }
}

TEST(DynamicQuantize, InfAndNanAnywhere) {
  std::mt19937 rng(6);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (size_t n : {1, 7, 8, 9, 24, 37, 130, 200}) {
    for (float special : specials) {
      for (size_t at : {size_t{0}, size_t{17}, n / 2, n - 1}) {
        if (at >= n) continue;
        std::vector<float> x(n);
        for (float& v : x) v = normal(rng);
        x[at] = special;
        expect_matches_reference(x, "special value");
      }
    }
  }
}

// Rows [m_begin, m_end) quantized into a prepared activation (and x_q) hold the reference's values
// plus the grouping's offset, zeros in the padding, the right row sums; other rows stay untouched.
void expect_rows_prepared(const std::vector<float>& x, int64_t M, int64_t K, onebit::KGroup group, int64_t m_begin,
                          int64_t m_end, bool with_x_q, const char* what, const Reference& r) {
  onebit::PreparedActivation a;
  onebit::shape_prepared_activation(M, K, onebit::QType::Uint8, r.zero_point, group, a);
  std::fill(a.quads.begin(), a.quads.end(), uint8_t{0xA5});
  std::fill(a.pairs.begin(), a.pairs.end(), int16_t{0x5A5});
  std::fill(a.row_sum.begin(), a.row_sum.end(), 12345);
  std::vector<uint8_t> x_q(x.size(), 0xA5);
  onebit::quantize_rows_prepared(x.data(), m_begin, m_end, r.scale, r.zero_point, a, with_x_q ? x_q.data() : nullptr);
  const int32_t offset = group == onebit::KGroup::Quads ? 0 : -128;
  EXPECT_EQ(a.zero_point, r.zero_point + offset) << what;
  for (int64_t m = 0; m < M; ++m) {
    const bool written = m >= m_begin && m < m_end;
    int32_t sum = 0;
    for (int64_t k = 0; k < a.row_stride; ++k) {
      const int32_t want = k < K ? r.x_q[static_cast<size_t>(m * K + k)] + offset : 0;
      sum += want;
      if (written)
        ASSERT_EQ(a.at(m, k), want) << what << " m=" << m << " k=" << k;
      else
        ASSERT_EQ(a.at(m, k), group == onebit::KGroup::Quads ? 0xA5 : 0x5A5) << what << " untouched row " << m;
    }
    EXPECT_EQ(a.row_sum[static_cast<size_t>(m)], written ? sum : 12345) << what << " row sum " << m;
    for (int64_t k = 0; k < K && with_x_q; ++k)
      ASSERT_EQ(x_q[static_cast<size_t>(m * K + k)], written ? r.x_q[static_cast<size_t>(m * K + k)] : 0xA5)
          << what << " x_q m=" << m << " k=" << k;
  }
}

TEST(QuantizeRowsPrepared, MatchesReferenceInEachGrouping) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(-0.2f, 1.5f);
  for (const auto group : {onebit::KGroup::Pairs, onebit::KGroup::Quads}) {
    for (int64_t K : {1, 3, 4, 15, 16, 17, 33, 64, 383}) {
      const int64_t M = 5;
      std::vector<float> x(static_cast<size_t>(M * K));
      for (float& v : x) v = normal(rng);
      expect_rows_prepared(x, M, K, group, 0, M, true, "all rows", reference(x));
      expect_rows_prepared(x, M, K, group, 1, 4, false, "middle rows, no x_q", reference(x));
    }
  }
}

TEST(QuantizeRowsPrepared, InfAndNanAsDynamicQuantize) {
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (const auto group : {onebit::KGroup::Pairs, onebit::KGroup::Quads}) {
    for (float special : specials) {
      const int64_t M = 3, K = 21;
      std::vector<float> x(static_cast<size_t>(M * K), 0.25f);
      x[0] = -1.0f;
      x[static_cast<size_t>(K + 17)] = special;  // row 1, in the masked tail of a 16-lane step
      expect_rows_prepared(x, M, K, group, 0, M, true, "special value", reference(x));
    }
  }
}

// A static QuantizeLinear's scale: ties (v / scale = n + 0.5) round to even, values past either
// end saturate, at every position of a 16-lane step and its tail.
TEST(QuantizeRowsPrepared, StaticScaleRoundsTiesToEvenAndSaturates) {
  for (const auto group : {onebit::KGroup::Pairs, onebit::KGroup::Quads}) {
    const int64_t M = 2, K = 45;
    std::vector<float> x(static_cast<size_t>(M * K));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = (static_cast<float>(i % 23) - 11.0f) * 0.25f + (i % 3 == 0 ? 0.0f : 40.0f * (i % 2 ? 1 : -1));
    x[5] = 1e30f, x[50] = -1e30f, x[44] = 0.75f;  // 0.75 / 0.5 = 1.5: to 2
    expect_rows_prepared(x, M, K, group, 0, M, true, "static scale", with_values(x, {0.5f, 100, {}}));
  }
}

}  // namespace
}  // namespace onebit_test
