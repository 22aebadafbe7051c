// SPDX-License-Identifier: Apache-2.0
// W4A8 kernel selection by CPU feature, and the whole-matrix entry point.
#include <cstdlib>
#include <cstring>

#include "kernels/cpu_features.h"
#include "kernels/gemm_w4a8_kernels.h"
#include "kernels/one_thread_estimate.h"

namespace onebit {

const std::vector<W4A8Kernel>& w4a8_kernels() {
  static const std::vector<W4A8Kernel> kernels{
      // Multiply-adds a ns, one core, Xeon: avx512vnni 100–140 at 8–128 rows, avx2 about 70 at
      // 16 rows, portable 0.16 (AMX's are higher from 48 rows; the rule that reads them is about
      // small calls). avxvnni is taken as avx2.
      {"amx", gemm_w4a8_tiles_amx, [] { return cpu_features().amx_int8; }, prepare_w4a8_rows_amx, 2, 100},
      {"avx512vnni", gemm_w4a8_tiles_avx512vnni, [] { return cpu_features().avx512_vnni; },
       prepare_w4a8_rows_avx512vnni, 2, 100},
      {"avxvnni", gemm_w4a8_tiles_avxvnni, [] { return cpu_features().avx_vnni; }, nullptr, 1, 50},
      {"avx2", gemm_w4a8_tiles_avx2, [] { return cpu_features().avx2; }, nullptr, 1, 50},
      {"portable", gemm_w4a8_tiles_portable, [] { return true; }, nullptr, 1, 0.16},
  };
  return kernels;
}

namespace {

// ONEBIT_KERNEL names the W4A8 kernel too (the same names as gemm_q8's, whose selection refuses an
// unknown name or one this CPU cannot run); otherwise the first this CPU runs.
const W4A8Kernel& choose_kernel() {
  const char* forced = std::getenv("ONEBIT_KERNEL");
  for (const W4A8Kernel& k : w4a8_kernels())
    if (forced != nullptr && std::strcmp(forced, k.name) == 0 && k.available()) return k;
  for (const W4A8Kernel& k : w4a8_kernels())
    if (k.available()) return k;
  return w4a8_kernels().back();
}

}  // namespace

const W4A8Kernel& selected_w4a8_kernel() {
  static const W4A8Kernel& kernel = choose_kernel();
  return kernel;
}

void gemm_w4a8_tiles(const BlockQuantizedActivation& x, const PackedNBits& w, int64_t tile_begin, int64_t tile_end,
                     const float* bias, float* y, int64_t y_stride) {
  selected_w4a8_kernel().run(x, w, tile_begin, tile_end, bias, y, y_stride);
}

int64_t w4a8_row_tile_step() { return selected_w4a8_kernel().row_tile_step; }

double w4a8_one_thread_ns(const PackedNBits& w, int64_t M) {
  const double bytes = static_cast<double>(w.tiles() * w.tile_stride());
  const double macs = static_cast<double>(M) * static_cast<double>(w.K) * static_cast<double>(w.N);
  return bytes / kOneCoreReadBytesPerNs + macs / selected_w4a8_kernel().macs_per_ns;
}

void prepare_w4a8_rows(BlockQuantizedActivation& x) {
  if (selected_w4a8_kernel().prepare_rows != nullptr) selected_w4a8_kernel().prepare_rows(x);
}

void gemm_w4a8(const float* x, int64_t M, const PackedNBits& w, const float* bias, float* y) {
  BlockQuantizedActivation a;
  quantize_activation_blocks(x, M, w.K, w.block_size, a);
  prepare_w4a8_rows(a);
  gemm_w4a8_tiles(a, w, 0, w.tiles(), bias, y, w.N);
}

}  // namespace onebit
