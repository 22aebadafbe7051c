// SPDX-License-Identifier: Apache-2.0
// gemm_q8: exact int32 accumulators acc[M,N] = (x_q - zp_x) · (W_q - zp_w[n]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/packed_bytes.h"
#include "kernels/quant_types.h"

namespace onebit {

// Largest K for which every accumulator fits in int32 (|x - zx|, |w - zw| <= 255). It is every
// kernel's bound: no kernel saturates or rounds on the way (vpmaddwd and vpdpbusd products and
// sums are exact and wrap modulo 2^32 like the fold), so each one yields the true result modulo
// 2^32, which is the true result whenever that fits. kernels/README.md derives it per kernel.
constexpr int64_t kMaxK = INT32_MAX / (255 * 255);

// Columns per packed block: the 16 int32 lanes of one zmm register (AVX-512 VNNI kernel), or two
// ymm registers (AVX-VNNI and AVX2 kernels).
constexpr int64_t kBlockN = 16;

// How a kernel takes k: vpmaddwd multiplies int16 pairs, vpdpbusd byte quads. Weights and
// activations are prepared in the grouping of the kernel that will run them.
enum class KGroup : int64_t { Pairs = 2, Quads = 4 };

// Weights packed once at compile time into the layout the kernels stream. Values are int8
// (uint8 shifted by -128). Columns come in blocks of kBlockN; inside a block, k comes in groups
// of g = 2 or 4: group i holds, for each of the 16 columns, w[g·i .. g·i+g-1][n] (16·g bytes).
// K is padded to a whole group and N to a whole block with zeros, which add nothing to any dot
// product. Zero points (shifted alike) and column sums fold the zero-point terms out of the
// inner loop.
struct PackedWeights {
  int64_t K = 0;
  int64_t N = 0;
  KGroup group = KGroup::Pairs;
  PackedBytes<int8_t> blocks;       // n_blocks() × block_bytes()
  std::vector<int32_t> zero_point;  // per column
  std::vector<int32_t> col_sum;     // sum over k of the shifted w[k][n]

  int64_t group_size() const { return static_cast<int64_t>(group); }
  int64_t k_padded() const { return (K + group_size() - 1) / group_size() * group_size(); }
  int64_t n_blocks() const { return (N + kBlockN - 1) / kBlockN; }
  int64_t block_bytes() const { return k_padded() * kBlockN; }
  // The shifted value of w[k][n] (k < K, n < N).
  int8_t at(int64_t k, int64_t n) const {
    const int64_t g = group_size();
    return blocks[static_cast<size_t>((n / kBlockN) * block_bytes() + (k / g) * g * kBlockN + (n % kBlockN) * g +
                                      k % g)];
  }
};

// The grouping of the kernel gemm_q8_blocks runs (selected once per process).
KGroup selected_k_group();

// w points at K×N (or N×K when w_is_nk) values of type `type`. zero_points holds 1 value
// (per tensor) or N values (per output column); null means zero. Packs for `group` only, so a
// session holds one copy of the weights.
PackedWeights pack_weights(const void* w, QType type, int64_t K, int64_t N, bool w_is_nk, const int32_t* zero_points,
                           int64_t zero_point_count, KGroup group = selected_k_group());
// Whether pack_weights of these operands in p's grouping gives p, read back value by value (one
// pass, no copy): how a shared packing is matched against a weight it was not packed from.
bool packs_to(const PackedWeights& p, const void* w, QType type, int64_t K, int64_t N, bool w_is_nk,
              const int32_t* zero_points, int64_t zero_point_count);

struct Activation {
  const void* data = nullptr;  // M×K row-major
  QType type = QType::Int8;
  int32_t zero_point = 0;  // unshifted, as in the model
  int64_t M = 0;
};

// An activation made ready for the kernels once per call, rows padded to a whole k group with
// zeros, with the row sums. x - zx is what counts, so each grouping stores values in the range
// its instruction wants and shifts the zero point alike:
//   Pairs: int8 range (uint8 shifted by -128) widened to int16, for vpmaddwd;
//   Quads: uint8 range (int8 shifted by +128), vpdpbusd's unsigned operand.
struct PreparedActivation {
  KGroup group = KGroup::Pairs;
  int64_t M = 0;
  int64_t K = 0;
  int64_t row_stride = 0;      // elements per row (K rounded up to the group)
  int32_t zero_point = 0;      // shifted like the values
  std::vector<int16_t> pairs;  // M × row_stride when group == Pairs, else empty
  std::vector<uint8_t> quads;  // M × row_stride when group == Quads, else empty
  std::vector<int32_t> row_sum;

  // The stored (shifted) value of x[m][k].
  int32_t at(int64_t m, int64_t k) const {
    const auto i = static_cast<size_t>(m * row_stride + k);
    return group == KGroup::Pairs ? int32_t(pairs[i]) : int32_t(quads[i]);
  }
  // What to subtract from the stored values (and from the zero point, and K times from the row
  // sums) for the int8-range form a consumer outside the kernels (the device) takes.
  int32_t int8_offset() const { return group == KGroup::Quads ? 128 : 0; }
};

PreparedActivation prepare_activation(const Activation& x, int64_t K, KGroup group = selected_k_group());
// The same into `a`, reusing the storage it has.
void prepare_activation(const Activation& x, int64_t K, KGroup group, PreparedActivation& a);
// Sizes `a` for M rows of K values of type `type` with `zero_point` (unshifted), for a producer
// that writes the rows itself (a fused quantization); the rows and row sums are left to it.
void shape_prepared_activation(int64_t M, int64_t K, QType type, int32_t zero_point, KGroup group,
                               PreparedActivation& a);
// Stores the rows.M rows of `rows` (K = a.K each, of the type `a` was shaped for) as rows
// [first_row, first_row + rows.M) of `a`, with their row sums.
void store_prepared_rows(const Activation& rows, int64_t first_row, PreparedActivation& a);

// A float output the VNNI kernels write from their registers instead of acc: y[m][n] =
// float(acc) * scale[n or 0] (+ bias[n]), in float32 steps as Epilogue::float32_steps rounds them
// (quantize_dynamic's Cast -> Mul -> Add). y has acc's stride and column numbering.
struct FusedFloatOutput {
  float* y;
  const float* scale;
  bool per_column;    // scale has one value per column, else one
  const float* bias;  // null: none
  // y written with streaming stores, past the caches (y 64-byte aligned, rows a multiple of 64
  // bytes): for outputs too large to stay in them (host_leg's streams_float_output).
  bool stream = false;
};

// acc[m][n] for the columns of blocks [block_begin, block_end), stored at acc[m * acc_stride + n]
// (n counted from column 0 of the matrix). Runs the kernel selected for this process; operands
// prepared in another grouping (tests, tools) get the portable kernel, which reads either.
// With `fused`, a kernel that fuses float outputs (gemm_q8_fuses_float_output()) writes y there
// and leaves acc untouched; the others ignore it and fill acc.
void gemm_q8_blocks(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                    int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused = nullptr);
// Whether gemm_q8_blocks honours `fused` for these operands (a fusing kernel is selected and they
// are prepared for it).
bool gemm_q8_fuses_float_output(const PreparedActivation& x, const PackedWeights& w);

// The whole M×N product into acc (M×N int32).
void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc);

}  // namespace onebit
