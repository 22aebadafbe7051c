// SPDX-License-Identifier: Apache-2.0
// The portable W4A8 kernel: the contract of gemm_w4a8.h written as plain loops over the packed
// tiles. The reference every other W4A8 kernel matches bit for bit.
#include <algorithm>

#include "kernels/gemm_w4a8_kernels.h"

namespace onebit {

void gemm_w4a8_tiles_portable(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                              int64_t tile_end, const float* bias, float* y, int64_t y_stride) {
  const int64_t k_blocks = w.k_blocks();
  for (int64_t m = 0; m < x.M; ++m) {
    const int8_t* row = x.q.data() + m * x.row_stride();
    for (int64_t n = tile_begin * kW4A8TileN; n < std::min(w.N, tile_end * kW4A8TileN); ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < k_blocks; ++b) {
        int32_t raw = 0;
        for (int64_t k = b * w.block_size; k < std::min(w.K, (b + 1) * w.block_size); ++k)
          raw += int32_t(row[k]) * w.weight(k, n);
        const int32_t dot = raw - w.zero_point(b, n) * x.sum[static_cast<size_t>(m * k_blocks + b)];
        const float scale = x.scale[static_cast<size_t>(m * k_blocks + b)] * w.scale(b, n);
        acc = acc + scale * float(dot);
      }
      y[m * y_stride + n] = bias != nullptr ? acc + bias[n] : acc;
    }
  }
}

}  // namespace onebit
