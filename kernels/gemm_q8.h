// SPDX-License-Identifier: Apache-2.0
// gemm_q8: exact int32 accumulators acc[M,N] = (x_q - zp_x) · (W_q - zp_w[n]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/huge_page_allocator.h"
#include "kernels/quant_types.h"

namespace onebit {

// Largest K for which every accumulator fits in int32 (|x - zx|, |w - zw| <= 255).
constexpr int64_t kMaxK = INT32_MAX / (255 * 255);

// Columns per packed block: one 256-bit register holds 8 columns × one k pair as int16.
constexpr int64_t kBlockN = 16;

// Weights packed once at compile time into the layout the kernels stream. Values are int8
// (uint8 shifted by -128). Columns come in blocks of kBlockN; inside a block, k comes in pairs:
// pair p holds, for each of the 16 columns, w[2p][n] then w[2p+1][n] (32 bytes). K is padded to
// an even count and N to a whole block with zeros, which add nothing to any dot product.
// Zero points (shifted alike) and column sums fold the zero-point terms out of the inner loop.
struct PackedWeights {
  int64_t K = 0;
  int64_t N = 0;
  std::vector<int8_t, HugePageAllocator<int8_t>> blocks;  // n_blocks() × k_pairs() × 2·kBlockN bytes
  std::vector<int32_t> zero_point;  // per column
  std::vector<int32_t> col_sum;     // sum over k of the shifted w[k][n]

  int64_t k_pairs() const { return (K + 1) / 2; }
  int64_t n_blocks() const { return (N + kBlockN - 1) / kBlockN; }
  // The shifted value of w[k][n] (k < K, n < N).
  int8_t at(int64_t k, int64_t n) const {
    return blocks[static_cast<size_t>(((n / kBlockN) * k_pairs() + k / 2) * 2 * kBlockN + (n % kBlockN) * 2 + k % 2)];
  }
};

// w points at K×N (or N×K when w_is_nk) values of type `type`. zero_points holds 1 value
// (per tensor) or N values (per output column); null means zero.
PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
                           const int32_t* zero_points, int64_t zero_point_count);

struct Activation {
  const void* data = nullptr;  // M×K row-major
  QType type = QType::Int8;
  int32_t zero_point = 0;      // unshifted, as in the model
  int64_t M = 0;
};

// An activation made ready for the kernels once per call: shifted values widened to int16,
// rows padded to an even K (so a k pair is one 32-bit word), and the row sums.
struct PreparedActivation {
  int64_t M = 0;
  int64_t K = 0;
  int64_t row_stride = 0;  // int16 elements per row (K rounded up to even)
  int32_t zero_point = 0;  // shifted
  std::vector<int16_t> values;
  std::vector<int32_t> row_sum;
};

PreparedActivation prepare_activation(const Activation& x, int64_t K);

// acc[m][n] for the columns of blocks [block_begin, block_end), stored at acc[m * acc_stride + n]
// (n counted from column 0 of the matrix). Uses the fastest kernel this CPU runs.
void gemm_q8_blocks(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                    int64_t block_end, int32_t* acc, int64_t acc_stride);

// The whole M×N product into acc (M×N int32).
void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc);

}  // namespace onebit
