// SPDX-License-Identifier: Apache-2.0
// The W4A8 ymm kernel's Dot for VNNI CPUs: vpdpbusd adds the four products of each lane's
// unsigned weight quad and int8 activation quad into int32 in one instruction, exact (no 16-bit
// step). kEvex picks its encoding: VEX (AVX-VNNI) or EVEX (AVX-512 VL + VNNI; AVX-512 CPUs lack
// AVX-VNNI). Written out as gemm_q8_vnni.h's is (GCC 12 copies the accumulator around the
// intrinsic). Include inside a `#pragma GCC target` region, after gemm_w4a8_ymm.h.
#pragma once
#include <immintrin.h>

namespace onebit {
namespace {

template <bool kEvex>
struct VnniDot {
  static __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
    if constexpr (kEvex)
      __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(s));
    else
      __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "xm"(s));
    return acc;
  }
  // Two chains of two: the four vpdpbusd of one row need not wait on each other's latency.
  static __m256i dot4(__m256i acc, const __m256i (&w)[4], const __m256i (&x)[4]) {
    const __m256i a = dpbusd(dpbusd(acc, w[0], x[0]), w[1], x[1]);
    const __m256i b = dpbusd(dpbusd(_mm256_setzero_si256(), w[2], x[2]), w[3], x[3]);
    return _mm256_add_epi32(a, b);
  }
};

}  // namespace
}  // namespace onebit
