// SPDX-License-Identifier: Apache-2.0
// Float work outside the integer GEMM (attention, the SwiGLU gate) written once over GCC's generic
// vectors and compiled for each instruction set: 16 floats (one zmm) under AVX-512, 8 (one ymm)
// under AVX2, 4 (one xmm) elsewhere. Wider generic vectors than the target's registers go through
// the stack (4 times slower in AVX2), so each variant uses its own width. Include it only from a
// kernel's .cpp: the helpers are always inlined into functions of one instruction set each.
#pragma once
#pragma GCC diagnostic ignored "-Wpsabi"  // no vector crosses a call, whatever GCC says of the ABI

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/gemm_q8_kernels.h"

namespace onebit::float_vectors {

using V16 = float __attribute__((vector_size(64)));
using V8 = float __attribute__((vector_size(32)));
using V4 = float __attribute__((vector_size(16)));
template <class V>
constexpr size_t kLanes = sizeof(V) / sizeof(float);
using I16 = int32_t __attribute__((vector_size(64)));
using I8 = int32_t __attribute__((vector_size(32)));
using I4 = int32_t __attribute__((vector_size(16)));
template <class V>
using IntVector = std::conditional_t<sizeof(V) == 64, I16, std::conditional_t<sizeof(V) == 32, I8, I4>>;

#define ONEBIT_INLINE inline __attribute__((always_inline))

template <class V>
ONEBIT_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class V>
ONEBIT_INLINE void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

ONEBIT_INLINE float sum_lanes(V4 v) { return (v[0] + v[2]) + (v[1] + v[3]); }

ONEBIT_INLINE float sum_lanes(V8 v) {
  return sum_lanes(V4(__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7)));
}

ONEBIT_INLINE float sum_lanes(V16 v) {
  return sum_lanes(V8(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                      __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15)));
}

// e^x for x <= 0, relative error below 1e-7; 0 below -87 (where e^x is below float's normal
// range); NaN stays NaN: x = n·ln2 + r with |r| <= ln2/2, e^r by its Taylor series to r^7, 2^n
// built in the exponent bits (of a clamped x, so they stay a normal float).
template <class V>
ONEBIT_INLINE V exp_nonpositive(V x) {
  const V clamped = x < -87.0f ? V{} - 87.0f : x;
  // Adding 1.5·2^23 rounds x·log2(e) to an integer held in the low mantissa bits.
  const V shifted = clamped * 1.44269504088896341f + 12582912.0f;
  const V n = shifted - 12582912.0f;
  const V r = (clamped - n * 0.693145751953125f) - n * 1.428606765330187e-06f;  // ln2 in two parts
  V p = V{} + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const IntVector<V> exponent = (std::bit_cast<IntVector<V>>(shifted) - 0x4B400000 + 127) << 23;
  return x < -87.0f ? V{} : p * std::bit_cast<V>(exponent);
}

// A float kernel's variants, widest first: {name, available, run}, the AVX-512 one where the CPU
// has AVX-512, the AVX2 one where it has AVX2, the portable one everywhere.
template <class Variant>
std::vector<Variant> float_variants(decltype(Variant::run) avx512, decltype(Variant::run) avx2,
                                    decltype(Variant::run) portable) {
  return {{"avx512", [] { return cpu_features().avx512; }, avx512},
          {"avx2", [] { return cpu_features().avx2; }, avx2},
          {"portable", [] { return true; }, portable}};
}

// The variant of `variants` (each with `name` "avx512", "avx2" or "portable" and `available()`,
// the last one portable) for the instruction set of the host kernel selected (ONEBIT_KERNEL, else
// the fastest this CPU runs), so that one variable chooses every kernel this library runs.
template <class Variant>
const Variant& variant_for_host_kernel(const std::vector<Variant>& variants) {
  const std::string kernel = selected_kernel_name();
  const char* name = kernel == "portable"                                ? "portable"
                     : kernel.rfind("avx512", 0) == 0 || kernel == "amx" ? "avx512"
                                                                         : "avx2";
  for (const Variant& v : variants)
    if (v.name == std::string(name) && v.available()) return v;
  return variants.back();
}

}  // namespace onebit::float_vectors
