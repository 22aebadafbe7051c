// SPDX-License-Identifier: Apache-2.0
// AVX-VNNI gemm_q8 (VEX vpdpbusd, Alder Lake and Zen 5 clients): the VNNI kernel of
// gemm_q8_vnni.h on ymm registers (8 columns per register, two per block; 16 registers).
// Compiled for these instructions only inside this file, and run only where cpu_features()
// reports them.
// Everything shared with other files is included before the target region, so that shared
// inline code keeps the default target (a copy built for this one could be the one the linker
// keeps).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,avxvnni")

#include "kernels/gemm_q8_vnni.h"

namespace onebit {

namespace {

struct Ymm {
  using Reg = __m256i;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm256_setzero_si256(); }
  static Reg load(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static Reg broadcast(const uint8_t* p) {
    int32_t quad;
    std::memcpy(&quad, p, sizeof(quad));
    return _mm256_set1_epi32(quad);
  }
  // Written out as the zmm kernel's is (GCC 12 copies the accumulator around the intrinsic);
  // {vex} keeps the AVX-VNNI encoding, which needs no AVX-512.
  static Reg dpbusd(Reg acc, Reg x, Reg w) {
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(x), "xm"(w));
    return acc;
  }
  static Reg add(Reg a, Reg b) { return _mm256_add_epi32(a, b); }
  static void store(int32_t* p, Reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
};

}  // namespace

void gemm_q8_blocks_avxvnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                            int64_t block_end, int32_t* acc, int64_t acc_stride) {
  gemm_q8_blocks_vnni<Ymm>(x, w, block_begin, block_end, acc, acc_stride);
}

}  // namespace onebit

#pragma GCC pop_options
