// SPDX-License-Identifier: Apache-2.0
#include "kernels/group_query_attention.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/float_vectors.h"
#include "kernels/one_thread_estimate.h"

namespace onebit {

namespace {

using namespace float_vectors;

// scores[j] = scale · q·keys[j] for j < rows, head_size = kChunks vectors: q stays in registers.
template <class V, size_t kChunks>
ONEBIT_INLINE void scores_of(const float* q, const float* keys, size_t rows, float scale, float* scores) {
  constexpr size_t n = kLanes<V>;
  V query[kChunks];
  for (size_t c = 0; c < kChunks; ++c) query[c] = load<V>(q + c * n);
  for (size_t j = 0; j < rows; ++j) {
    const float* k = keys + j * kChunks * n;
    V lanes = query[0] * load<V>(k);
    for (size_t c = 1; c < kChunks; ++c) lanes += query[c] * load<V>(k + c * n);
    scores[j] = scale * sum_lanes(lanes);
  }
}

// out = Σ_j weights[j] · values[j] over j < rows, head_size = kChunks vectors: the sum in registers.
template <class V, size_t kChunks>
ONEBIT_INLINE void weighted_sum(const float* weights, const float* values, size_t rows, float* out) {
  constexpr size_t n = kLanes<V>;
  V sum[kChunks] = {};
  for (size_t j = 0; j < rows; ++j) {
    const float* v = values + j * kChunks * n;
    for (size_t c = 0; c < kChunks; ++c) sum[c] += weights[j] * load<V>(v + c * n);
  }
  for (size_t c = 0; c < kChunks; ++c) store<V>(out + c * n, sum[c]);
}

// The same for any head_size, a value at a time (heads not a multiple of 16 wide).
ONEBIT_INLINE void scores_any(const float* q, const float* keys, size_t rows, size_t d, float scale, float* scores) {
  for (size_t j = 0; j < rows; ++j) {
    float sum = 0;
    for (size_t i = 0; i < d; ++i) sum += q[i] * keys[j * d + i];
    scores[j] = scale * sum;
  }
}

ONEBIT_INLINE void weighted_sum_any(const float* weights, const float* values, size_t rows, size_t d, float* out) {
  std::fill_n(out, d, 0.0f);
  for (size_t j = 0; j < rows; ++j)
    for (size_t i = 0; i < d; ++i) out[i] += weights[j] * values[j * d + i];
}

// p[0, n) = softmax(p[0, n))
template <class V>
ONEBIT_INLINE void softmax(float* p, size_t n) {
  constexpr size_t lanes = kLanes<V>;
  float top = p[0];
  for (size_t j = 1; j < n; ++j) top = std::max(top, p[j]);
  V total = {};
  size_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const V e = exp_nonpositive<V>(load<V>(p + j) - top);
    store<V>(p + j, e);
    total += e;
  }
  if (j < n) {  // the last, partial vector: through a padded copy, of which only its n - j values count
    float tail[lanes] = {};
    for (size_t l = 0; j + l < n; ++l) tail[l] = p[j + l] - top;
    const V e = exp_nonpositive<V>(load<V>(tail));
    store<V>(tail, e);
    for (size_t l = 0; j + l < n; ++l) {
      p[j + l] = tail[l];
      total[l] += tail[l];
    }
  }
  const float inverse = 1.0f / sum_lanes(total);
  for (j = 0; j < n; ++j) p[j] *= inverse;
}

template <class V, size_t kWidth16>
ONEBIT_INLINE void attend_head_chunks(const float* q, const float* keys, const float* values, size_t rows, float scale,
                                      float* scores, float* out) {
  constexpr size_t kChunks = kWidth16 * 16 / kLanes<V>;
  scores_of<V, kChunks>(q, keys, rows, scale, scores);
  softmax<V>(scores, rows);
  weighted_sum<V, kChunks>(scores, values, rows, out);
}

// attend_head_chunks for a head of `width16` · 16 floats, if it is one of kWidths + 1.
template <class V, size_t... kWidths>
ONEBIT_INLINE bool attend_head_of_width(size_t width16, const float* q, const float* keys, const float* values,
                                        size_t rows, float scale, float* scores, float* out,
                                        std::index_sequence<kWidths...>) {
  return ((width16 == kWidths + 1 &&
           (attend_head_chunks<V, kWidths + 1>(q, keys, values, rows, scale, scores, out), true)) ||
          ...);
}

// One query head row against `rows` cache rows: out = softmax(scale · q·kᵀ) · v. Heads 16 to 256
// wide in 16s run with their row in registers, others a value at a time.
template <class V>
ONEBIT_INLINE void attend_head(const float* q, const float* keys, const float* values, size_t rows, size_t d,
                               float scale, float* scores, float* out) {
  if (d % 16 == 0 &&
      attend_head_of_width<V>(d / 16, q, keys, values, rows, scale, scores, out, std::make_index_sequence<16>{}))
    return;
  scores_any(q, keys, rows, d, scale, scores);
  softmax<V>(scores, rows);
  weighted_sum_any(scores, values, rows, d, out);
}

// Rotates one head row at `position` (rotary_dim leading values; the rest copied).
ONEBIT_INLINE void rotate(const AttentionShape& shape, const AttentionCall& call, const float* in, size_t position,
                          float* out) {
  const size_t half = shape.rotary_dim / 2;
  const float* cos = call.cos + position * half;
  const float* sin = call.sin + position * half;
  if (shape.rotary_interleaved) {
    for (size_t i = 0; i < half; ++i) {
      const float x = in[2 * i], y = in[2 * i + 1];
      out[2 * i] = x * cos[i] - y * sin[i];
      out[2 * i + 1] = y * cos[i] + x * sin[i];
    }
  } else {
    for (size_t i = 0; i < half; ++i) {
      const float x = in[i], y = in[i + half];
      out[i] = x * cos[i] - y * sin[i];
      out[i + half] = y * cos[i] + x * sin[i];
    }
  }
  std::copy(in + shape.rotary_dim, in + shape.head_size, out + shape.rotary_dim);
}

// Where head `head` of row `row` of batch entry b starts in the query, key or value input
// (kind 0, 1, 2): heads of kind 1 and 2 are KV heads.
ONEBIT_INLINE const float* head_row(const AttentionShape& shape, const AttentionCall& call, int kind, size_t b,
                                    size_t row, size_t head) {
  const size_t d = shape.head_size, line = b * shape.rows + row;
  if (shape.packed_qkv) {
    const size_t first = kind == 0 ? 0 : kind == 1 ? shape.heads : shape.heads + shape.kv_heads;
    return call.query + (line * (shape.heads + 2 * shape.kv_heads) + first + head) * d;
  }
  const float* base = kind == 0 ? call.query : kind == 1 ? call.key : call.value;
  return base + (line * (kind == 0 ? shape.heads : shape.kv_heads) + head) * d;
}

// The present buffer of (b, kv head): past rows copied in unless it is the past buffer itself,
// rows after the new ones zeroed (as ORT's), the new keys (rotated) and values appended.
ONEBIT_INLINE void append(const AttentionShape& shape, const AttentionCall& call, size_t b, size_t g, size_t past,
                          float* keys, float* values) {
  const size_t d = shape.head_size;
  const size_t cache = (b * shape.kv_heads + g) * shape.past_rows * d;
  const size_t after = (past + shape.rows) * d, end = shape.present_rows * d;
  if (call.past_key != call.present_key) {
    std::copy_n(call.past_key + cache, past * d, keys);
    std::fill(keys + after, keys + end, 0.0f);
  }
  if (call.past_value != call.present_value) {
    std::copy_n(call.past_value + cache, past * d, values);
    std::fill(values + after, values + end, 0.0f);
  }
  for (size_t s = 0; s < shape.rows; ++s) {
    const float* k = head_row(shape, call, 1, b, s, g);
    if (shape.rotary_dim)
      rotate(shape, call, k, past + s, keys + (past + s) * d);
    else
      std::copy_n(k, d, keys + (past + s) * d);
    std::copy_n(head_row(shape, call, 2, b, s, g), d, values + (past + s) * d);
  }
}

template <class V>
ONEBIT_INLINE void attend_body(const AttentionShape& shape, const AttentionCall& call, size_t task) {
  const size_t b = task / shape.kv_heads, g = task % shape.kv_heads, d = shape.head_size;
  const size_t group = shape.heads / shape.kv_heads;
  const size_t past = attention_past_rows(shape, call, b);
  float* keys = call.present_key + (b * shape.kv_heads + g) * shape.present_rows * d;
  float* values = call.present_value + (b * shape.kv_heads + g) * shape.present_rows * d;
  append(shape, call, b, g, past, keys, values);

  thread_local std::vector<float> scratch;
  scratch.resize(d + past + shape.rows);
  float* query = scratch.data();  // the rotated query row
  float* scores = query + d;      // its scores, then weights
  const size_t valid = static_cast<size_t>(call.seqlens_k[b]) + 1;
  for (size_t s = 0; s < shape.rows; ++s)
    for (size_t h = g * group; h < (g + 1) * group; ++h) {
      const float* q = head_row(shape, call, 0, b, s, h);
      if (shape.rotary_dim)
        rotate(shape, call, q, past + s, query);
      else
        std::copy_n(q, d, query);
      // Causal: row s attends to the cache up to itself, and never past the entry's valid rows (a
      // first prompt's padding rows attend to its valid ones, as ORT's do).
      attend_head<V>(query, keys, values, std::min(past + s + 1, valid), d, shape.scale, scores,
                     call.output + ((b * shape.rows + s) * shape.heads + h) * d);
    }
}

// One body, compiled for each instruction set; the caller picks by the CPU (attention_variant).
__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) void attend_avx512(const AttentionShape& shape,
                                                                                 const AttentionCall& call,
                                                                                 size_t task) {
  attend_body<V16>(shape, call, task);
}

__attribute__((target("avx2"))) void attend_avx2(const AttentionShape& shape, const AttentionCall& call, size_t task) {
  attend_body<V8>(shape, call, task);
}

void attend_portable(const AttentionShape& shape, const AttentionCall& call, size_t task) {
  attend_body<V4>(shape, call, task);
}

const AttentionVariant& selected_variant() {
  static const AttentionVariant& chosen = variant_for_host_kernel(attention_variants());
  return chosen;
}

}  // namespace

const std::vector<AttentionVariant>& attention_variants() {
  static const std::vector<AttentionVariant> variants =
      float_variants<AttentionVariant>(attend_avx512, attend_avx2, attend_portable);
  return variants;
}

size_t attention_past_rows(const AttentionShape& shape, const AttentionCall& call, size_t b) {
  return shape.first_prompt ? 0 : static_cast<size_t>(call.seqlens_k[b]) + 1 - shape.rows;
}

double attention_one_thread_ns(const AttentionShape& shape, const AttentionCall& call) {
  double ns = 0;
  for (size_t b = 0; b < shape.batch; ++b) {
    const double past = static_cast<double>(attention_past_rows(shape, call, b));
    const double valid = static_cast<double>(call.seqlens_k[b]) + 1;
    const double rows = static_cast<double>(shape.rows);
    // Query row s attends to min(past + s + 1, valid) cache rows (a first prompt's padding rows to
    // the valid ones): k rows below the cap, the rest at it.
    const double k = std::clamp(valid - past, 0.0, rows);
    const double attended = k * past + k * (k + 1) / 2 + (rows - k) * valid;
    const double cache_bytes = valid * static_cast<double>(shape.kv_heads * shape.head_size) * 2 * sizeof(float);
    const double macs = 2 * attended * static_cast<double>(shape.heads * shape.head_size);
    ns += cache_bytes / kOneCoreReadBytesPerNs + macs / 16.0 + 100.0 * static_cast<double>(shape.kv_heads);
  }
  return ns;
}

void attend(const AttentionShape& shape, const AttentionCall& call, size_t task) {
  selected_variant().run(shape, call, task);
}

const char* attention_variant() { return selected_variant().name; }

}  // namespace onebit
