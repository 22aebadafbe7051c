// SPDX-License-Identifier: Apache-2.0
// Causal grouped-query attention over a KV cache, float32: com.microsoft GroupQueryAttention as
// ORT's CPU EP computes it. The new keys (rotated) and values are appended to the cache after the
// past rows; each query row (rotated) attends to the cache rows up to its own position:
// softmax(scale · q·kᵀ) · v. A task is one KV head with its group of query heads, taken one after
// the other: the first brings the group's cache rows into L2 for the others. Decode is dominated by
// reading the cache from memory (kernels/README.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace onebit {

struct AttentionShape {
  size_t batch = 0;
  size_t rows = 0;  // S: new tokens per batch entry
  size_t heads = 0;
  size_t kv_heads = 0;  // divides heads
  size_t head_size = 0;
  size_t rotary_dim = 0;  // 0: no rotary embedding; else even, at most head_size
  bool rotary_interleaved = false;
  bool packed_qkv = false;    // query holds [q heads, k heads, v heads] per row; key and value are null
  size_t past_rows = 0;       // rows of each past buffer (dim 2 of past_key): the cache's capacity
  size_t present_rows = 0;    // rows of each present buffer
  bool first_prompt = false;  // rows == total: no past rows are valid
  float scale = 0;            // applied to q·kᵀ
};

struct AttentionCall {
  const float* query = nullptr;  // [batch, rows, heads·head_size] or packed
  const float* key = nullptr;    // [batch, rows, kv_heads·head_size]
  const float* value = nullptr;
  const float* past_key = nullptr;  // [batch, kv_heads, past_rows, head_size], may be present_key itself
  const float* past_value = nullptr;
  float* present_key = nullptr;  // [batch, kv_heads, present_rows, head_size]
  float* present_value = nullptr;
  const int32_t* seqlens_k = nullptr;  // per batch entry: valid cache rows after this call, minus 1
  const float* cos = nullptr;          // [positions, rotary_dim / 2]
  const float* sin = nullptr;
  float* output = nullptr;  // [batch, rows, heads·head_size]
};

// Cache rows valid before this call for batch entry b (0 for a first prompt).
size_t attention_past_rows(const AttentionShape& shape, const AttentionCall& call, size_t b);

// Independent tasks of a call: one per batch entry and KV head.
inline size_t attention_tasks(const AttentionShape& shape) { return shape.batch * shape.kv_heads; }

// One thread's time for a checked call, roughly (ns): each batch entry's valid cache rows read at
// kOneCoreReadBytesPerNs, the multiply-adds of q·kᵀ and p·v (causal: each query row over the rows it sees) at 16 a
// ns, and 0.1 µs a task (60,000 tiny tasks took 5.3 ms). For the split rule (engine/intra_op_threads.h).
// SmolLM2 (9 heads over 3 KV heads of 64), one new row: 13 µs after a 64-token prompt, 192 after
// 960 (in the model 23 and 178 were measured, BENCHMARKS.md session 18).
double attention_one_thread_ns(const AttentionShape& shape, const AttentionCall& call);

// Runs task `task` (< attention_tasks). The caller has checked the call: seqlens_k within the
// present buffer, at least `rows`, positions within cos/sin (ep/attention_kernel.cpp).
void attend(const AttentionShape& shape, const AttentionCall& call, size_t task);

// One compilation of attend for an instruction set.
struct AttentionVariant {
  const char* name;  // avx512, avx2, portable
  bool (*available)();
  void (*run)(const AttentionShape& shape, const AttentionCall& call, size_t task);
};

// Every variant, widest first; the last (portable) runs everywhere. Not bit-exact with each other:
// float sums in other orders.
const std::vector<AttentionVariant>& attention_variants();

// The variant attend runs: the instruction set of the host kernel selected (ONEBIT_KERNEL, else
// the fastest this CPU runs).
const char* attention_variant();

}  // namespace onebit
