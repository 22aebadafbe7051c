// SPDX-License-Identifier: Apache-2.0
// A C entry point to the W4A8 kernels for test/python (ctypes), so the C++ kernels themselves are
// compared with ORT's MatMulNBits, not only the numpy reference of their contract. Test-only.
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/gemm_w4a8_kernels.h"

// Packs MatMulNBits' inputs and runs the kernel named `kernel` (null: the selected one) on x
// (M×K) into y (M×N). Returns 0, or 1 with the reason in `error` (error_size bytes).
extern "C" __attribute__((visibility("default"))) int onebit_w4a8_matmul(
    int64_t K, int64_t N, int64_t bits, int64_t block_size, const uint8_t* b, int64_t b_bytes, const float* scales,
    int64_t scale_count, const uint8_t* zero_points, int64_t zero_point_bytes, const float* x, int64_t M,
    const float* bias, const char* kernel, float* y, char* error, int64_t error_size) {
  const auto fail = [&](const std::string& message) {
    std::snprintf(error, static_cast<size_t>(error_size), "%s", message.c_str());
    return 1;
  };
  const onebit::W4A8Kernel* chosen = &onebit::selected_w4a8_kernel();
  if (kernel != nullptr) {
    chosen = nullptr;
    for (const onebit::W4A8Kernel& k : onebit::w4a8_kernels())
      if (std::strcmp(k.name, kernel) == 0 && k.available()) chosen = &k;
    if (chosen == nullptr) return fail(std::string("no W4A8 kernel '") + kernel + "' on this CPU");
  }
  onebit::PackedNBits packed;
  const std::string packing = onebit::pack_nbits_weights(
      {K, N, bits, block_size, b, b_bytes, scales, scale_count, zero_points, zero_point_bytes}, packed);
  if (!packing.empty()) return fail(packing);
  onebit::BlockQuantizedActivation a;
  onebit::quantize_activation_blocks(x, M, K, block_size, a);
  chosen->run(a, packed, 0, packed.tiles(), bias, y, N);
  return 0;
}
