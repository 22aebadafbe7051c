// SPDX-License-Identifier: Apache-2.0
// gemm_w4a8: com.microsoft.MatMulNBits with accuracy_level=4 (4- or 8-bit weights in K-blocks,
// activations quantized to int8 per row and K-block, integer block dots). The contract, stated
// once here and in kernels/README.md, which every kernel meets bit for bit:
//
//   amax = max|x[m,k]| over the block (k < K), a_scale[m,b] = amax / 127 (float),
//   q = nearbyint(x · (127 / amax)) (float product, round half to even; 0 where 127/amax is not
//   finite: amax 0, or below 127/FLT_MAX ≈ 3.7e-37),
//   so q ∈ [-127, 127] — ORT's CompInt8 quantizer, integer for integer;
//   dot[m,n,b]   = Σ_k q[m,k] · (w[k,n] − zp[n,b])  over the block's k < K, exact in int32;
//   y[m,n]       = (Σ_b in increasing b: acc = acc + (a_scale[m,b] · w_scale[n,b]) · float(dot))
//                  + bias[n],  each · and + a float32 operation rounded on its own (no FMA).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/packed_bytes.h"

namespace onebit {

// Columns per packed tile: the 8 int32 / float lanes of one ymm register.
constexpr int64_t kW4A8TileN = 8;

// MatMulNBits' constant inputs exactly as the model stores them (kernels/README.md, "MatMulNBits
// input format"): B [N, n_blocks, block_size·bits/8] uint8, low nibble first; scales N·n_blocks
// floats, column-major by block; zero_points (null: symmetric, 2^(bits−1)) N·⌈n_blocks·bits/8⌉
// uint8, for 4 bits block 2j in the low nibble of byte j.
struct NBitsWeights {
  int64_t K = 0, N = 0, bits = 4, block_size = 32;
  const uint8_t* b = nullptr;
  int64_t b_bytes = 0;
  const float* scales = nullptr;
  int64_t scale_count = 0;
  const uint8_t* zero_points = nullptr;
  int64_t zero_point_bytes = 0;
};

// The weights in the layout the kernels stream: tiles of kW4A8TileN columns (the last padded
// with zero scales), each tile its k-blocks in order, each k-block
//   weights  block_size·bits bytes, in units of 32 bytes: byte 4c+i of a unit is column c's
//            weight at k0+i; with 4 bits its low nibble is k0+i, its high nibble k0+4+i (a unit
//            spans 8 k), with 8 bits the byte is the weight (a unit spans 4 k);
//   scales   kW4A8TileN floats;
//   zero points kW4A8TileN uint8, only when the model has them (else 2^(bits−1) for all).
// One contiguous stream per tile: decode reads each tile front to back once.
struct PackedNBits {
  int64_t K = 0, N = 0, bits = 4, block_size = 32;
  bool has_zero_points = false;
  PackedBytes<uint8_t> data;

  int64_t k_blocks() const { return (K + block_size - 1) / block_size; }
  int64_t tiles() const { return (N + kW4A8TileN - 1) / kW4A8TileN; }
  int64_t weight_bytes() const { return block_size * bits; }  // one k-block of one tile
  int64_t block_stride() const {
    return weight_bytes() + kW4A8TileN * int64_t(sizeof(float)) + (has_zero_points ? kW4A8TileN : 0);
  }
  int64_t tile_stride() const { return k_blocks() * block_stride(); }
  // The unsigned weight w[k][n] (k < K, n < N), its block's scale and zero point.
  int32_t weight(int64_t k, int64_t n) const;
  float scale(int64_t b, int64_t n) const;
  int32_t zero_point(int64_t b, int64_t n) const;
};

// Sets every field of `out` but data as pack_nbits_weights(w) would (data will hold tiles() ×
// tile_stride() bytes); returns an empty string, or what is malformed, as pack_nbits_weights does.
std::string packed_nbits_geometry(const NBitsWeights& w, PackedNBits& out);
// Packs `w` into `out`; returns an empty string, or what is malformed (sizes, bits, block size)
// and leaves `out` untouched.
std::string pack_nbits_weights(const NBitsWeights& w, PackedNBits& out);
// Whether pack_nbits_weights(w) gives p, byte for byte (packed again a tile at a time): how a shared
// packing is matched against weights it was not packed from. False for malformed w.
bool packs_to(const PackedNBits& p, const NBitsWeights& w);

// Activations quantized per row and k-block (the contract's q and a_scale), rows padded with
// zeros to whole blocks, with each block's Σq (the zero-point correction).
struct BlockQuantizedActivation {
  int64_t M = 0, K = 0, block_size = 32;
  std::vector<int8_t> q;     // M × k_blocks·block_size
  std::vector<float> scale;  // M × k_blocks
  std::vector<int32_t> sum;  // M × k_blocks
  // The AVX-512 kernel's copy of q, Σq and scale by groups of 8 rows (prepare_w4a8_rows): empty
  // until then, and emptied by quantizing again.
  std::vector<int32_t> row_groups;

  int64_t k_blocks() const { return (K + block_size - 1) / block_size; }
  int64_t row_stride() const { return k_blocks() * block_size; }
};

// x: M×K floats, row-major. Reuses the storage `a` has.
void quantize_activation_blocks(const float* x, int64_t M, int64_t K, int64_t block_size, BlockQuantizedActivation& a);

// Once per call, after quantizing and before the tiles are split over tasks: lays the activations
// out as the selected kernel reads more than one row (the AVX-512 kernel's row groups), so the
// tasks do not each do it. Optional: without it that kernel lays them out itself, per task.
void prepare_w4a8_rows(BlockQuantizedActivation& x);
// How many tiles the selected kernel runs side by side for more than one row (1, or 2 for the
// AVX-512 and AMX kernels, whose tile pairs a range should not split).
int64_t w4a8_row_tile_step();
// One thread's time for a call of M rows over w, roughly (ns): the packed weights streamed at
// kOneCoreReadBytesPerNs and the multiply-adds at the selected kernel's rate (the split rule,
// engine/intra_op_threads.h).
double w4a8_one_thread_ns(const PackedNBits& w, int64_t M);

// y[m][n] for the columns of tiles [tile_begin, tile_end), at y[m·y_stride + n] (n counted from
// column 0); bias: N floats or null. Runs the kernel selected for this process.
void gemm_w4a8_tiles(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                     const float* bias, float* y, int64_t y_stride);

// The whole M×N product: quantizes x (M×K), then every tile into y (M×N).
void gemm_w4a8(const float* x, int64_t M, const PackedNBits& w, const float* bias, float* y);

}  // namespace onebit
