// SPDX-License-Identifier: Apache-2.0
#include "kernels/silu_gate.h"

#include "kernels/float_vectors.h"

namespace onebit {

namespace {

using namespace float_vectors;

template <class V>
ONEBIT_INLINE V silu_gated(V gate, V up) {
  const V e = exp_nonpositive<V>(gate < 0 ? gate : -gate);     // e^−|g|: never overflows
  const V sigmoid = (gate < 0 ? e : V{} + 1.0f) / (1.0f + e);  // e^g / (1 + e^g) below 0
  return gate * sigmoid * up;
}

template <class V>
ONEBIT_INLINE void silu_gate_body(const float* gate, float* up, size_t count) {
  constexpr size_t lanes = kLanes<V>;
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) store<V>(up + i, silu_gated(load<V>(gate + i), load<V>(up + i)));
  if (i < count) {  // the last, partial vector through padded copies
    float g[lanes] = {}, u[lanes] = {};
    for (size_t l = 0; i + l < count; ++l) g[l] = gate[i + l], u[l] = up[i + l];
    store<V>(u, silu_gated(load<V>(g), load<V>(u)));
    for (size_t l = 0; i + l < count; ++l) up[i + l] = u[l];
  }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))) void silu_gate_avx512(const float* gate, float* up,
                                                                                    size_t count) {
  silu_gate_body<V16>(gate, up, count);
}

__attribute__((target("avx2"))) void silu_gate_avx2(const float* gate, float* up, size_t count) {
  silu_gate_body<V8>(gate, up, count);
}

void silu_gate_portable(const float* gate, float* up, size_t count) { silu_gate_body<V4>(gate, up, count); }

}  // namespace

const std::vector<SiluGateVariant>& silu_gate_variants() {
  static const std::vector<SiluGateVariant> variants =
      float_variants<SiluGateVariant>(silu_gate_avx512, silu_gate_avx2, silu_gate_portable);
  return variants;
}

void silu_gate(const float* gate, float* up, size_t count) {
  static const SiluGateVariant& chosen = variant_for_host_kernel(silu_gate_variants());
  chosen.run(gate, up, count);
}

}  // namespace onebit
