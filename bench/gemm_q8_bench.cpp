// SPDX-License-Identifier: Apache-2.0
// Times the host gemm_q8 + epilogue per call (one thread) for the projection shapes with the
// selected kernel (ONEBIT_KERNEL picks another), and measures this machine's limits the same way
// every time: one-thread read bandwidth and the int8 multiply-add peaks of vpmaddwd (the AVX2
// kernel's instruction) and, where the CPU has it, zmm vpdpbusd (the AVX-512 VNNI kernel's).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/time_calls.h"
#include "kernels/cpu_features.h"
#include "kernels/epilogue.h"
#include "kernels/gemm_q8_kernels.h"

namespace {

using onebit_bench::Clock;
using onebit_bench::seconds_since;
using onebit_bench::Stats;
using onebit_bench::time_calls;

__attribute__((target("avx2"))) double read_bandwidth_gbs() {
  const size_t bytes = size_t(1) << 30;  // 1 GiB: far beyond every cache
  std::vector<uint8_t> buffer(bytes, 1);
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < bytes; i += 128) {
      a = _mm256_add_epi8(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&buffer[i])));
      b = _mm256_add_epi8(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&buffer[i + 32])));
      c = _mm256_add_epi8(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&buffer[i + 64])));
      d = _mm256_add_epi8(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&buffer[i + 96])));
    }
    const double s = seconds_since(t0);
    volatile int sink = _mm256_extract_epi8(_mm256_add_epi8(_mm256_add_epi8(a, b), _mm256_add_epi8(c, d)), 0);
    (void)sink;
    best = std::max(best, double(bytes) / s / 1e9);
  }
  return best;
}

// int8 multiply-add peaks: a k pair (or quad) broadcast from L1 each step, multiplied with six
// distinct weight registers into six accumulators (distinct, so nothing is shared or hoisted).
//   exact:      vpmaddwd (int16 pairs -> int32) + vpaddd: 16 MACs per multiply, the kernel's path;
//   saturating: vpmaddubsw (u8 x s8 pairs -> int16, saturating) + vpmaddwd(ones) + vpaddd:
//               32 MACs per step, MLAS's u8s8 path, shown for comparison.
template <bool kSaturating>
__attribute__((target("avx2"), noinline)) double int8_peak_gmacs() {
  const int64_t iterations = 50'000'000;
  alignas(32) static int32_t pairs[1024];
  for (int i = 0; i < 1024; ++i) pairs[i] = 0x01020304 + i;
  __m256i acc[6], w[6];
  for (int r = 0; r < 6; ++r) {
    acc[r] = _mm256_setzero_si256();
    w[r] = _mm256_set1_epi16(static_cast<int16_t>(3 + 2 * r));
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    const __m256i x = _mm256_set1_epi32(pairs[i & 1023]);
    for (int r = 0; r < 6; ++r) {
      const __m256i product =
          kSaturating ? _mm256_madd_epi16(_mm256_maddubs_epi16(x, w[r]), ones) : _mm256_madd_epi16(x, w[r]);
      acc[r] = _mm256_add_epi32(acc[r], product);
    }
  }
  const double s = seconds_since(t0);
  int sink = 0;
  for (auto& r : acc) sink += _mm256_extract_epi32(r, 0);
  volatile int keep = sink;
  (void)keep;
  return double(iterations) * 6 * (kSaturating ? 32 : 16) / s / 1e9;
}

// vpdpbusd on zmm: 64 MACs per instruction, sixteen independent accumulators (as the kernel's
// prefill tile has). The loop is one asm block: written in C++, GCC 12 kept the accumulator
// array on the stack and the loop measured store-to-load forwarding, well below what the kernel
// itself sustains (BENCHMARKS.md).
__attribute__((target("avx512f,avx512vnni"), noinline)) double vnni_peak_gmacs() {
  int64_t iterations = 50'000'000;
  const double macs = double(iterations) * 16 * 64;
  const auto t0 = Clock::now();
  __asm__ volatile(
      "vpternlogd $0xff, %%zmm16, %%zmm16, %%zmm16\n\t"
      "vpternlogd $0xff, %%zmm17, %%zmm17, %%zmm17\n\t"
      "1:\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm0\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm1\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm2\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm3\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm4\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm5\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm6\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm7\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm8\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm9\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm10\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm11\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm12\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm13\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm14\n\t"
      "vpdpbusd %%zmm17, %%zmm16, %%zmm15\n\t"
      "dec %0\n\t"
      "jnz 1b\n\t"
      : "+r"(iterations)
      :
      : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11", "zmm12",
        "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "cc");
  return macs / seconds_since(t0) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_limits = !(argc > 1 && std::strcmp(argv[1], "--no-limits") == 0);
  if (const std::string error = onebit::kernel_choice_error(); !error.empty()) {
    std::fprintf(stderr, "gemm_q8_bench: %s\n", error.c_str());
    return 2;
  }
  const int repeat = 30;
  std::printf("kernel: %s, 1 thread, %d timed calls per cell (median, min-max), weights cold (not in cache)\n",
              onebit::selected_kernel_name(), repeat);
  if (with_limits) {
    std::printf(
        "machine: read bandwidth %.1f GB/s (1 thread, 1 GiB, best of 5); int8 MAC peak %.1f GMAC/s exact "
        "(vpmaddwd), %.1f GMAC/s saturating (vpmaddubsw)\n",
        read_bandwidth_gbs(), int8_peak_gmacs<false>(), int8_peak_gmacs<true>());
    if (onebit::cpu_features().avx512_vnni)
      std::printf("machine: int8 MAC peak %.1f GMAC/s exact (vpdpbusd zmm)\n", vnni_peak_gmacs());
  }
  std::mt19937 rng(1);
  const int64_t shapes[][2] = {{1024, 2048}, {1024, 1024}, {1024, 3072}, {2048, 1024}, {3072, 1024}};
  std::printf("%-11s %5s %22s %10s %10s\n", "KxN", "M", "ms per call", "GB/s", "GMAC/s");
  for (const auto& s : shapes) {
    const int64_t K = s[0], N = s[1];
    std::vector<int8_t> w(static_cast<size_t>(K * N));
    for (auto& v : w) v = static_cast<int8_t>(int(rng() % 255) - 127);
    // Enough copies of the weights that each call reads them from memory, not from the 32 MiB
    // L3, as a model's 196 distinct weights are.
    const size_t copies = std::max<size_t>(2, size_t(96 << 20) / size_t(K * N));
    std::vector<onebit::PackedWeights> packed_copies;
    for (size_t i = 0; i < copies; ++i)
      packed_copies.push_back(onebit::pack_weights(w.data(), onebit::QType::Int8, K, N, false, nullptr, 0));
    size_t call = 0;
    onebit::Epilogue epilogue;
    epilogue.kind = onebit::OutputKind::Int8;
    epilogue.scale.assign(static_cast<size_t>(N), 1e-4);
    epilogue.y_scale = 0.05;
    for (int64_t M : {1, 4, 32, 36, 128}) {
      std::vector<int8_t> x(static_cast<size_t>(M * K));
      for (auto& v : x) v = static_cast<int8_t>(int(rng() % 256) - 128);
      std::vector<int32_t> acc(static_cast<size_t>(M * N));
      std::vector<int8_t> y(static_cast<size_t>(M * N));
      const Stats t = time_calls(
          [&] {
            const auto& packed = packed_copies[call++ % copies];
            const auto prepared = onebit::prepare_activation({x.data(), onebit::QType::Int8, 0, M}, K);
            onebit::gemm_q8_blocks(prepared, packed, 0, packed.n_blocks(), acc.data(), N);
            epilogue.apply(acc.data(), M, N, y.data());
          },
          repeat);
      std::printf("%5lldx%-5lld %5lld %8.3f (%.3f-%.3f) %10.1f %10.1f\n", (long long)K, (long long)N, (long long)M,
                  t.median, t.min, t.max, double(K * N) / t.median / 1e6, double(M * K * N) / t.median / 1e6);
    }
  }
  return 0;
}
