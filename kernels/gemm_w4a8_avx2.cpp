// SPDX-License-Identifier: Apache-2.0
// AVX2 W4A8 kernel: the ymm kernel of gemm_w4a8_ymm.h with vpmaddubsw multiplying the unsigned
// weights by the int8 activations into int16 pair sums. Nibbles make that exact (2·15·127 < 2^15),
// and four quads summed in int16 still are (8·15·127 < 2^15), so vpmaddwd by ones turns 16 k at a
// time into int32.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_w4a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2")

#include "kernels/gemm_w4a8_ymm.h"

namespace onebit {

namespace {

struct MaddubsDot {
  static __m256i dot4(__m256i acc, const __m256i (&w)[4], const __m256i (&x)[4]) {
    const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], x[0]), _mm256_maddubs_epi16(w[1], x[1]));
    const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], x[2]), _mm256_maddubs_epi16(w[3], x[3]));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_add_epi16(s01, s23), _mm256_set1_epi16(1)));
  }
};

}  // namespace

void gemm_w4a8_tiles_avx2(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                          const float* bias, float* y, int64_t y_stride) {
  gemm_w4a8_tiles_ymm<MaddubsDot>(x, w, tile_begin, tile_end, bias, y, y_stride);
}

}  // namespace onebit

#pragma GCC pop_options
