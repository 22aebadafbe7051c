// SPDX-License-Identifier: Apache-2.0
// Every attention variant this CPU runs against a plain double reference of the operator: outputs
// and the present caches, over decode, prompts, batches, packed QKV, rotary forms and head widths
// that take the register path (16·n) and the one a value at a time. (ORT's own kernel is the
// reference in test/python/test_group_query_attention.py.)
#include "kernels/group_query_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "float_variant_test.h"

namespace onebit {
namespace {

struct Case {
  std::string name;
  size_t batch, rows, heads, kv_heads, head_size, rotary_dim;
  bool interleaved, packed;
  size_t past_rows;
  std::vector<int32_t> valid;  // rows valid after the call, per batch entry
  bool shared;                 // present is the past buffer itself
};

struct Data {
  AttentionShape shape;
  std::vector<float> query, key, value, past_key, past_value, present_key, present_value, cos, sin, output;
  std::vector<int32_t> seqlens;
};

Data make(const Case& c) {
  Data d;
  AttentionShape& s = d.shape;
  s.batch = c.batch;
  s.rows = c.rows;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_size = c.head_size;
  s.rotary_dim = c.rotary_dim;
  s.rotary_interleaved = c.interleaved;
  s.packed_qkv = c.packed;
  s.past_rows = c.past_rows;
  s.first_prompt = c.past_rows == 0;
  s.present_rows = std::max(c.past_rows, c.rows);
  s.scale = 1.0f / std::sqrt(static_cast<float>(c.head_size));
  std::mt19937 rng(static_cast<unsigned>(c.name.size()));
  std::normal_distribution<float> normal;
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (float& x : v) x = normal(rng);
  };
  const size_t width = c.packed ? c.heads + 2 * c.kv_heads : c.heads;
  fill(d.query, c.batch * c.rows * width * c.head_size);
  if (!c.packed) {
    fill(d.key, c.batch * c.rows * c.kv_heads * c.head_size);
    fill(d.value, c.batch * c.rows * c.kv_heads * c.head_size);
  }
  fill(d.past_key, c.batch * c.kv_heads * c.past_rows * c.head_size);
  fill(d.past_value, c.batch * c.kv_heads * c.past_rows * c.head_size);
  d.present_key.assign(c.batch * c.kv_heads * s.present_rows * c.head_size, -1.0f);
  d.present_value.assign(d.present_key.size(), -1.0f);
  const size_t half = c.rotary_dim / 2, positions = 64;
  for (size_t p = 0; p < positions; ++p)
    for (size_t i = 0; i < half; ++i) {
      const double angle = p / std::pow(10000.0, static_cast<double>(i) / half);
      d.cos.push_back(static_cast<float>(std::cos(angle)));
      d.sin.push_back(static_cast<float>(std::sin(angle)));
    }
  d.output.assign(c.batch * c.rows * c.heads * c.head_size, 0.0f);
  for (int32_t v : c.valid) d.seqlens.push_back(v - 1);
  return d;
}

AttentionCall call_of(Data& d, bool shared) {
  AttentionCall call;
  call.query = d.query.data();
  call.key = d.shape.packed_qkv ? nullptr : d.key.data();
  call.value = d.shape.packed_qkv ? nullptr : d.value.data();
  call.past_key = shared ? d.present_key.data() : d.past_key.data();
  call.past_value = shared ? d.present_value.data() : d.past_value.data();
  call.present_key = d.present_key.data();
  call.present_value = d.present_value.data();
  call.seqlens_k = d.seqlens.data();
  call.cos = d.cos.data();
  call.sin = d.sin.data();
  call.output = d.output.data();
  return call;
}

// The head row of q, k or v (kind 0, 1, 2) at (b, s, head), in double.
std::vector<double> head(const Data& d, int kind, size_t b, size_t s, size_t h) {
  const AttentionShape& a = d.shape;
  const size_t n = a.head_size, line = b * a.rows + s;
  const float* p;
  if (a.packed_qkv) {
    const size_t first = kind == 0 ? 0 : kind == 1 ? a.heads : a.heads + a.kv_heads;
    p = d.query.data() + (line * (a.heads + 2 * a.kv_heads) + first + h) * n;
  } else {
    const std::vector<float>& v = kind == 0 ? d.query : kind == 1 ? d.key : d.value;
    p = v.data() + (line * (kind == 0 ? a.heads : a.kv_heads) + h) * n;
  }
  return std::vector<double>(p, p + n);
}

std::vector<double> rotated(const Data& d, std::vector<double> x, size_t position) {
  const size_t half = d.shape.rotary_dim / 2;
  for (size_t i = 0; i < half; ++i) {
    const double c = d.cos[position * half + i], s = d.sin[position * half + i];
    const size_t a = d.shape.rotary_interleaved ? 2 * i : i, b = d.shape.rotary_interleaved ? 2 * i + 1 : i + half;
    const double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xb * c + xa * s;
  }
  return x;
}

// Checks what `variant` wrote into `d` against the operator in double.
void check(const Case& c, const Data& original, const Data& d, const std::string& variant) {
  const AttentionShape& a = d.shape;
  const size_t n = a.head_size;
  for (size_t b = 0; b < a.batch; ++b) {
    const size_t past = a.first_prompt ? 0 : c.valid[b] - a.rows, rows = past + a.rows;
    for (size_t g = 0; g < a.kv_heads; ++g) {
      std::vector<std::vector<double>> keys(rows), values(rows);
      for (size_t j = 0; j < rows; ++j) {
        if (j < past) {
          const float* k = original.past_key.data() + ((b * a.kv_heads + g) * a.past_rows + j) * n;
          const float* v = original.past_value.data() + ((b * a.kv_heads + g) * a.past_rows + j) * n;
          keys[j].assign(k, k + n);
          values[j].assign(v, v + n);
        } else {
          keys[j] = rotated(original, head(original, 1, b, j - past, g), j);
          values[j] = head(original, 2, b, j - past, g);
        }
        const size_t at = ((b * a.kv_heads + g) * a.present_rows + j) * n;
        for (size_t i = 0; i < n; ++i) {
          ASSERT_NEAR(d.present_key[at + i], keys[j][i], 1e-5) << variant << " " << c.name << " present_key row " << j;
          ASSERT_EQ(d.present_value[at + i], static_cast<float>(values[j][i])) << variant << " " << c.name;
        }
      }
      for (size_t h = g * (a.heads / a.kv_heads); h < (g + 1) * (a.heads / a.kv_heads); ++h)
        for (size_t s = 0; s < a.rows; ++s) {
          const std::vector<double> q = rotated(original, head(original, 0, b, s, h), past + s);
          // Causal, within the entry's valid rows (a first prompt's padding rows attend to those).
          const size_t span = std::min<size_t>(past + s + 1, c.valid[b]);
          std::vector<double> p(span);
          double top = -INFINITY, total = 0;
          for (size_t j = 0; j < span; ++j) {
            double dot = 0;
            for (size_t i = 0; i < n; ++i) dot += q[i] * keys[j][i];
            top = std::max(top, p[j] = dot * a.scale);
          }
          for (double& x : p) total += x = std::exp(x - top);
          for (size_t i = 0; i < n; ++i) {
            double out = 0;
            for (size_t j = 0; j < span; ++j) out += p[j] / total * values[j][i];
            ASSERT_NEAR(d.output[((b * a.rows + s) * a.heads + h) * n + i], out, 2e-5)
                << variant << " " << c.name << " batch " << b << " head " << h << " row " << s << " value " << i;
          }
        }
    }
  }
}

const std::vector<Case> kCases = {
    {"decode", 1, 1, 9, 3, 64, 64, false, false, 40, {33}, false},
    {"decode in place", 1, 1, 9, 3, 64, 64, false, false, 40, {33}, true},
    {"first prompt", 1, 20, 4, 2, 32, 32, false, false, 0, {20}, false},
    {"later prompt, in place", 1, 5, 4, 2, 16, 16, false, false, 30, {17}, true},
    {"batch of other lengths", 3, 1, 4, 1, 48, 32, true, false, 24, {5, 24, 12}, false},
    {"first prompt with padding", 2, 6, 4, 2, 32, 32, false, false, 0, {6, 3}, false},
    {"packed qkv", 2, 2, 6, 3, 80, 80, false, true, 20, {19, 7}, false},
    {"no rotary, 24 wide", 1, 3, 2, 2, 24, 0, false, false, 18, {18}, false},
    {"128 wide, partial rotary", 1, 1, 8, 2, 128, 64, false, false, 50, {50}, false},
    {"a group of 7, 64 wide", 1, 1, 7, 1, 64, 64, false, false, 40, {37}, false},
    {"a group of 2, 128 wide, later prompt", 1, 4, 4, 2, 128, 128, false, false, 20, {20}, false},
};

using AttentionVariants = FloatVariantTest<AttentionVariant, attention_variants>;

TEST_P(AttentionVariants, MatchesTheOperatorInDouble) {
  for (const Case& c : kCases) {
    const Data original = make(c);
    Data d = original;
    if (c.shared) {  // the cache is the past: its first rows hold it
      for (size_t b = 0; b < c.batch; ++b)
        for (size_t g = 0; g < c.kv_heads; ++g)
          for (size_t j = 0; j < c.past_rows * c.head_size; ++j) {
            const size_t at = (b * c.kv_heads + g) * c.past_rows * c.head_size + j;
            d.present_key[at] = original.past_key[at];
            d.present_value[at] = original.past_value[at];
          }
    }
    const AttentionCall call = call_of(d, c.shared);
    for (size_t task = 0; task < attention_tasks(d.shape); ++task) variant.run(d.shape, call, task);
    check(c, original, d, variant.name);
    if (!c.shared && d.shape.present_rows > 0) {  // rows after the valid ones are zeroed, as ORT's
      const size_t last = (c.valid[0] + 0) * c.head_size;
      for (size_t i = last; i < d.shape.present_rows * c.head_size; ++i)
        ASSERT_EQ(d.present_key[i], 0.0f) << variant.name << " " << c.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Each, AttentionVariants, ::testing::Range<size_t>(0, AttentionVariants::count()),
                         AttentionVariants::name);

TEST(GroupQueryAttention, TheSelectedVariantIsOneThisCpuRuns) {
  const std::string selected = attention_variant();
  bool found = false;
  for (const AttentionVariant& v : attention_variants()) found |= selected == v.name && v.available();
  EXPECT_TRUE(found) << selected;
}

// The estimate behind the split rule at SmolLM2's shape (1,536 cache bytes and 1,152 multiply-adds
// a row a query row sees: 200 ns, plus 0.1 µs for each of the 3 tasks): one new row after 64 and
// after 960 prompt tokens, each batch entry its own valid rows (not the buffers' capacity); a
// 64-token first prompt (row s sees s + 1 rows); one padded to 10 valid rows.
TEST(GroupQueryAttention, OneThreadEstimateCountsTheRowsEachQueryRowSees) {
  AttentionShape shape;
  shape.batch = 2;
  shape.rows = 1;
  shape.heads = 9;
  shape.kv_heads = 3;
  shape.head_size = 64;
  shape.past_rows = shape.present_rows = 2048;
  std::vector<int32_t> seqlens{64, 960};  // valid rows minus 1
  AttentionCall call;
  call.seqlens_k = seqlens.data();
  EXPECT_NEAR(attention_one_thread_ns(shape, call), 13'300 + 192'500, 1e-6);
  shape.batch = 1;
  EXPECT_NEAR(attention_one_thread_ns(shape, call), 13'300, 1e-6);
  shape.rows = 64;
  shape.first_prompt = true;
  seqlens[0] = 63;
  // 64 rows read (8,192 ns), 2,080 row visits (149,760 ns), 3 tasks.
  EXPECT_NEAR(attention_one_thread_ns(shape, call), 8'192 + 149'760 + 300, 1e-6);
  seqlens[0] = 9;
  // 10 rows read; rows 0–9 see 1–10 rows (55), the 54 padding rows the 10 valid ones (540).
  EXPECT_NEAR(attention_one_thread_ns(shape, call), 1'280 + 595 * 72 + 300, 1e-6);
}

}  // namespace
}  // namespace onebit
