// SPDX-License-Identifier: Apache-2.0
// The W4A8 kernel family behind gemm_w4a8_tiles, each meeting gemm_w4a8.h's contract bit for bit
// (float results included: the same float operations in the same order). The portable kernel is
// the reference; the tests run every kernel this CPU can.
#pragma once
#include <vector>

#include "kernels/gemm_w4a8.h"

namespace onebit {

using W4A8TilesKernel = void (*)(const BlockQuantizedActivation&, const PackedNBits&, int64_t tile_begin,
                                 int64_t tile_end, const float* bias, float* y, int64_t y_stride);

void gemm_w4a8_tiles_portable(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                              int64_t tile_end, const float* bias, float* y, int64_t y_stride);
// AVX2: vpmaddubsw on unsigned nibbles × int8 activations (exact: 2·15·127 < 2^15).
void gemm_w4a8_tiles_avx2(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                          const float* bias, float* y, int64_t y_stride);
void gemm_w4a8_tiles_avxvnni(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                             int64_t tile_end, const float* bias, float* y, int64_t y_stride);
void gemm_w4a8_tiles_avx512vnni(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin,
                                int64_t tile_end, const float* bias, float* y, int64_t y_stride);
void prepare_w4a8_rows_avx512vnni(BlockQuantizedActivation& x);
// AMX-INT8, from 48 rows (fewer: the AVX-512 VNNI kernel).
void gemm_w4a8_tiles_amx(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                         const float* bias, float* y, int64_t y_stride);
void prepare_w4a8_rows_amx(BlockQuantizedActivation& x);

// quantize_activation_blocks without SIMD (it takes the AVX2 form where the CPU has it; the two
// are equal integer for integer).
void quantize_activation_blocks_portable(const float* x, int64_t M, int64_t K, int64_t block_size,
                                         BlockQuantizedActivation& a);

struct W4A8Kernel {
  const char* name;  // as ONEBIT_KERNEL spells it
  W4A8TilesKernel run;
  bool (*available)();
  void (*prepare_rows)(BlockQuantizedActivation&) = nullptr;  // prepare_w4a8_rows; null: nothing to do
  int64_t row_tile_step = 1;                                  // w4a8_row_tile_step
  double macs_per_ns = 0;                                     // on one core, for w4a8_one_thread_ns
};

// Every W4A8 kernel, fastest first; the last one (portable) runs everywhere.
const std::vector<W4A8Kernel>& w4a8_kernels();
// The fastest kernel this CPU runs, or the one ONEBIT_KERNEL names (gemm_w4a8_host.cpp).
const W4A8Kernel& selected_w4a8_kernel();

}  // namespace onebit
