// SPDX-License-Identifier: Apache-2.0
// Times W4A8 (MatMulNBits, accuracy_level=4) per call, one thread, with the selected kernel
// (ONEBIT_KERNEL=portable for the reference): activation quantization + kernel, weights cold,
// for SmolLM2-135M's and Qwen3-0.6B's projection shapes, 4-bit symmetric, block 32 (what ORT's
// model builders emit). GB/s counts the packed bytes a call streams (weights, scales).
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "bench/time_calls.h"
#include "kernels/gemm_w4a8_kernels.h"

int main() {
  const int repeat = 50;
  const int64_t bits = 4, block_size = 32;
  std::printf(
      "kernel: %s, 1 thread, %d timed calls per cell (median, min-max), weights cold (not in cache), "
      "bits %lld, block %lld, symmetric\n",
      onebit::selected_w4a8_kernel().name, repeat, (long long)bits, (long long)block_size);
  std::mt19937 rng(1);
  const int64_t shapes[][2] = {{576, 576},   {576, 192},   {576, 1536},  {1536, 576},  {576, 49152},
                               {1024, 2048}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {3072, 1024}};
  std::printf("%-11s %5s %22s %10s\n", "KxN", "M", "ms per call", "GB/s");
  for (const auto& s : shapes) {
    const int64_t K = s[0], N = s[1], k_blocks = (K + block_size - 1) / block_size;
    std::vector<uint8_t> b(static_cast<size_t>(N * k_blocks * block_size * bits / 8));
    for (auto& v : b) v = static_cast<uint8_t>(rng());
    std::vector<float> scales(static_cast<size_t>(N * k_blocks));
    for (auto& v : scales) v = 0.01f + float(rng() % 1000) * 1e-5f;
    const onebit::NBitsWeights model{
        K, N, bits, block_size, b.data(), int64_t(b.size()), scales.data(), int64_t(scales.size()), nullptr, 0};
    // Enough copies that each call reads its weights from memory, not from the 32 MiB L3, as a
    // model's many distinct weights do.
    onebit::PackedNBits first;
    if (const std::string error = onebit::pack_nbits_weights(model, first); !error.empty()) {
      std::fprintf(stderr, "gemm_w4a8_bench: %s\n", error.c_str());
      return 1;
    }
    const auto packed_bytes = static_cast<double>(first.data.size());
    const size_t copies = std::max<size_t>(2, size_t(96 << 20) / first.data.size());
    std::vector<onebit::PackedNBits> packed(copies, first);
    size_t call = 0;
    for (int64_t M : {1, 4, 32, 128}) {
      std::vector<float> x(static_cast<size_t>(M * K));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (auto& v : x) v = normal(rng);
      std::vector<float> y(static_cast<size_t>(M * N));
      onebit::BlockQuantizedActivation a;
      const onebit_bench::Stats t = onebit_bench::time_calls(
          [&] {
            const onebit::PackedNBits& w = packed[call++ % copies];
            onebit::quantize_activation_blocks(x.data(), M, K, block_size, a);
            onebit::gemm_w4a8_tiles(a, w, 0, w.tiles(), nullptr, y.data(), N);
          },
          repeat);
      std::printf("%5lldx%-5lld %5lld %8.3f (%.3f-%.3f) %10.1f\n", (long long)K, (long long)N, (long long)M, t.median,
                  t.min, t.max, packed_bytes / t.median / 1e6);
    }
  }
  return 0;
}
