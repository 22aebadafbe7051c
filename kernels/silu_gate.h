// SPDX-License-Identifier: Apache-2.0
// The SwiGLU gate of an LLM's MLP, float32: up[i] = (gate[i] · sigmoid(gate[i])) · up[i], as the
// ONNX graph Sigmoid → Mul(gate, ·) → Mul(·, up) rounds it (each product rounded once, in that
// order). sigmoid(g) = 1 / (1 + e^−g) for g ≥ 0, e^g / (1 + e^g) below: within a few units in the
// last place of the exact value (ORT's Sigmoid is a rational approximation: the two differ by float
// rounding, README.md). ±Inf and NaN behave as in those operators.
#pragma once
#include <cstddef>
#include <vector>

namespace onebit {

// up[i] = silu(gate[i]) · up[i] for i < count.
void silu_gate(const float* gate, float* up, size_t count);

// One compilation of silu_gate for an instruction set.
struct SiluGateVariant {
  const char* name;  // avx512, avx2, portable
  bool (*available)();
  void (*run)(const float* gate, float* up, size_t count);
};

// Every variant, widest first; the last (portable) runs everywhere. Not bit-identical to each
// other: the AVX variants fuse multiply-adds.
const std::vector<SiluGateVariant>& silu_gate_variants();

}  // namespace onebit
