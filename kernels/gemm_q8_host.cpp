// SPDX-License-Identifier: Apache-2.0
// Kernel selection by CPU feature, and the whole-matrix entry point.
#include <cstdlib>
#include <cstring>

#include "kernels/gemm_q8_kernels.h"

namespace onebit {

bool avx2_available() { return __builtin_cpu_supports("avx2"); }

namespace {

bool portable_forced() {
  const char* choice = std::getenv("ONEBIT_KERNEL");
  return choice != nullptr && std::strcmp(choice, "portable") == 0;
}

}  // namespace

GemmBlocksKernel selected_kernel() {
  static const GemmBlocksKernel kernel =
      avx2_available() && !portable_forced() ? gemm_q8_blocks_avx2 : gemm_q8_blocks_portable;
  return kernel;
}

const char* selected_kernel_name() { return selected_kernel() == gemm_q8_blocks_avx2 ? "avx2" : "portable"; }

void gemm_q8_blocks(const PreparedActivation& x, const PackedWeights& w, int64_t block_begin, int64_t block_end,
                    int32_t* acc, int64_t acc_stride) {
  selected_kernel()(x, w, block_begin, block_end, acc, acc_stride);
}

void gemm_q8_host(const Activation& x, const PackedWeights& w, int32_t* acc) {
  const PreparedActivation prepared = prepare_activation(x, w.K);
  gemm_q8_blocks(prepared, w, 0, w.n_blocks(), acc, w.N);
}

}  // namespace onebit
