// SPDX-License-Identifier: Apache-2.0
// The kernel family behind gemm_q8_blocks, each with the same contract. The portable kernel is
// the reference every other one must match bit for bit; the tests run them all.
#pragma once
#include <string>
#include <vector>

#include "kernels/gemm_q8.h"

namespace onebit {

// `fused` (may be null) is honoured by the kernels that fuse float outputs and ignored by the others.
using GemmBlocksKernel = void (*)(const PreparedActivation&, const PackedWeights&, int64_t block_begin,
                                  int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused);

// Reads operands of either grouping.
void gemm_q8_blocks_portable(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                             int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput*);

// AVX2, k pairs (vpmaddwd on int16 pairs: exact, no pair-sum saturation).
void gemm_q8_blocks_avx2(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                         int32_t* acc, int64_t acc_stride, const FusedFloatOutput*);

// VNNI, k quads (vpdpbusd: uint8 × int8, four products into int32, exact): zmm with AVX-512
// VNNI, ymm with AVX-VNNI (VEX).
void gemm_q8_blocks_avx512vnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin,
                               int64_t block_end, int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused);
// AMX-INT8 (TDPBUSD tiles) from 16 rows, the zmm VNNI kernel below that; k quads as VNNI.
void gemm_q8_blocks_amx(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                        int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused);
void gemm_q8_blocks_avxvnni(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                            int32_t* acc, int64_t acc_stride, const FusedFloatOutput* fused);

struct HostKernel {
  const char* name;  // as ONEBIT_KERNEL spells it
  KGroup group;      // how its operands are packed and prepared
  GemmBlocksKernel run;
  bool fuses_float_output;  // honours FusedFloatOutput (the VNNI kernels)
  bool (*available)();      // whether this CPU and OS can run it
};

// Every kernel, fastest first; the last one (portable) runs everywhere.
const std::vector<HostKernel>& host_kernels();

// Why ONEBIT_KERNEL cannot be honoured (unknown name, or a kernel this CPU cannot run), or an
// empty string. The EP turns it into a failed session creation; the selection then falls back to
// the fastest available kernel so no caller ever runs an instruction the CPU lacks.
std::string kernel_choice_error();

// The kernel gemm_q8_blocks runs: ONEBIT_KERNEL when valid, else the fastest available one.
const HostKernel& selected_host_kernel();
GemmBlocksKernel selected_kernel();
const char* selected_kernel_name();

// Writes the zero-point-folded accumulators of one block of columns from raw dot products:
// acc = dot - zw[n]·rowsum[m] - zx·colsum[n] + K·zx·zw[n], in wrapping int32 (the true result fits).
inline int32_t fold_zero_points(int32_t dot, int32_t zw, int32_t row_sum, int32_t zx, int32_t col_sum, int64_t K) {
  const uint32_t total = uint32_t(dot) - uint32_t(zw) * uint32_t(row_sum) - uint32_t(zx) * uint32_t(col_sum) +
                         uint32_t(K) * uint32_t(zx) * uint32_t(zw);
  return static_cast<int32_t>(total);
}

}  // namespace onebit
