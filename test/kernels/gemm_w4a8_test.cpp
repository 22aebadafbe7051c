// SPDX-License-Identifier: Apache-2.0
// W4A8 (MatMulNBits, accuracy_level=4): every kernel this CPU runs against a plain loop of the
// contract written here from the model's own bytes (no packing), bit for bit; the activation
// quantizer against its rule; and the packer's rejections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/gemm_q8.h"
#include "kernels/gemm_w4a8_kernels.h"
#include "test_operands.h"

namespace {

using onebit::BlockQuantizedActivation;
using onebit::NBitsWeights;
using onebit::PackedNBits;

// A MatMulNBits weight as ORT stores it, with random contents (padding bytes too), and its values
// read straight from those bytes.
struct ModelWeights : onebit_test::NBitsModelWeights {
  int32_t weight(int64_t k, int64_t n) const {
    const uint8_t* column = b.data() + n * k_blocks() * block_size * bits / 8;
    return bits == 8 ? column[k] : (k % 2 == 0 ? column[k / 2] & 0xF : column[k / 2] >> 4);
  }
  int32_t zero_point(int64_t blk, int64_t n, bool with_zero_points) const {
    if (!with_zero_points) return 1 << (bits - 1);
    const uint8_t* column = zero_points.data() + n * ((k_blocks() * bits + 7) / 8);
    return bits == 8 ? column[blk] : (blk % 2 == 0 ? column[blk / 2] & 0xF : column[blk / 2] >> 4);
  }
};

ModelWeights random_weights(int64_t K, int64_t N, int64_t bits, int64_t block_size, std::mt19937& rng) {
  ModelWeights w{{K, N, bits, block_size, {}, {}, {}}};
  w.b.resize(static_cast<size_t>(N * w.k_blocks() * block_size * bits / 8));
  for (auto& v : w.b) v = static_cast<uint8_t>(rng());
  w.zero_points.resize(static_cast<size_t>(N * ((w.k_blocks() * bits + 7) / 8)));
  for (auto& v : w.zero_points) v = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  w.scales.resize(static_cast<size_t>(N * w.k_blocks()));
  for (auto& s : w.scales) s = scale(rng);
  return w;
}

std::vector<float> random_activation(int64_t M, int64_t K, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(M * K));
  for (auto& v : x) v = normal(rng);
  // Exact ties of the rounding, and an all-zero block where K allows one.
  if (K > 40) x[3] = x[0] = 127.0f, x[1] = 0.5f, x[2] = -2.5f;
  if (M > 1 && K >= 32) std::fill(x.begin() + K, x.begin() + K + 16, 0.0f);
  return x;
}

// One kernel as a test calls it, on its own copy of a call's activation: as the engine calls it
// (rows prepared once, where the kernel prepares rows) or without the preparation.
struct KernelCall {
  const onebit::W4A8Kernel* kernel;
  bool prepared;
  BlockQuantizedActivation a;

  std::string name() const { return std::string(kernel->name) + (prepared ? " (rows prepared)" : ""); }
};

// Every kernel this CPU runs on a, unprepared and (where the kernel prepares rows) prepared.
std::vector<KernelCall> kernel_calls(const BlockQuantizedActivation& a) {
  std::vector<KernelCall> calls;
  for (const onebit::W4A8Kernel& kernel : onebit::w4a8_kernels()) {
    if (!kernel.available()) continue;
    calls.push_back({&kernel, false, a});
    if (kernel.prepare_rows == nullptr) continue;
    calls.push_back({&kernel, true, a});
    kernel.prepare_rows(calls.back().a);
  }
  return calls;
}

// The contract of gemm_w4a8.h, step by step.
struct ReferenceQuantized {
  std::vector<int32_t> q;    // M × K
  std::vector<float> scale;  // M × k_blocks
};

ReferenceQuantized reference_quantize(const std::vector<float>& x, int64_t M, int64_t K, int64_t bs) {
  const int64_t k_blocks = (K + bs - 1) / bs;
  ReferenceQuantized r{std::vector<int32_t>(x.size()), std::vector<float>(static_cast<size_t>(M * k_blocks))};
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b < k_blocks; ++b) {
      float amax = 0;
      for (int64_t k = b * bs; k < std::min(K, (b + 1) * bs); ++k) amax = std::max(amax, std::fabs(x[m * K + k]));
      const float scale = amax / 127.0f;
      const float inverse = amax == 0.0f ? 0.0f : 127.0f / amax;
      for (int64_t k = b * bs; k < std::min(K, (b + 1) * bs); ++k)
        r.q[m * K + k] = int32_t(std::nearbyint(x[m * K + k] * inverse));
      r.scale[m * k_blocks + b] = scale;
    }
  return r;
}

std::vector<float> reference_gemm(const std::vector<float>& x, int64_t M, const ModelWeights& w, bool with_zp,
                                  const float* bias) {
  const ReferenceQuantized a = reference_quantize(x, M, w.K, w.block_size);
  std::vector<float> y(static_cast<size_t>(M * w.N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < w.N; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < w.k_blocks(); ++b) {
        int64_t dot = 0;
        for (int64_t k = b * w.block_size; k < std::min(w.K, (b + 1) * w.block_size); ++k)
          dot += int64_t(a.q[m * w.K + k]) * (w.weight(k, n) - w.zero_point(b, n, with_zp));
        const float s = a.scale[m * w.k_blocks() + b] * w.scales[n * w.k_blocks() + b];
        acc = acc + s * float(dot);
      }
      y[m * w.N + n] = bias != nullptr ? acc + bias[n] : acc;
    }
  return y;
}

struct Shape {
  int64_t K, N, bits, block_size;
  bool zero_points;
};

std::string shape_name(const testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  std::ostringstream name;  // (string + concatenation trips GCC 12's -Wrestrict here)
  name << "K" << s.K << "_N" << s.N << "_b" << s.bits << "_bs" << s.block_size << (s.zero_points ? "_zp" : "_sym");
  return name.str();
}

std::vector<Shape> shapes() {
  std::vector<Shape> all;
  for (int64_t bits : {4, 8})
    for (bool zp : {false, true}) {
      for (int64_t bs : {16, 32, 64, 128, 256}) all.push_back({bs * 3 + bs / 2 + 5, 37, bits, bs, zp});
      all.push_back({64, 8, bits, 32, zp});
      all.push_back({576, 67, bits, 32, zp});
      all.push_back({17, 3, bits, 16, zp});
      all.push_back({300, 1, bits, 128, zp});
    }
  return all;
}

class W4A8Kernels : public testing::TestWithParam<Shape> {};

TEST_P(W4A8Kernels, EveryKernelEqualsTheContractBitForBit) {
  const Shape s = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(s.K * 131 + s.N * 7 + s.bits + s.block_size + s.zero_points));
  const ModelWeights w = random_weights(s.K, s.N, s.bits, s.block_size, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(s.zero_points), packed), "");
  std::vector<float> bias(static_cast<size_t>(s.N));
  for (auto& v : bias) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  for (int64_t M : {1, 2, 3, 4, 7, 8, 9, 17, 32, 40, 48, 63}) {
    const std::vector<float> x = random_activation(M, s.K, rng);
    BlockQuantizedActivation a;
    onebit::quantize_activation_blocks(x.data(), M, s.K, s.block_size, a);
    for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
      const std::vector<float> want = reference_gemm(x, M, w, s.zero_points, b);
      for (const KernelCall& call : kernel_calls(a)) {
        std::vector<float> y(static_cast<size_t>(M * s.N), NAN);
        call.kernel->run(call.a, packed, 0, packed.tiles(), b, y.data(), s.N);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(std::memcmp(&y[i], &want[i], sizeof(float)), 0)
              << call.name() << " M=" << M << " output " << i << ": " << y[i] << " vs " << want[i]
              << (b ? " with bias" : "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, W4A8Kernels, testing::ValuesIn(shapes()), shape_name);

TEST(W4A8Kernels, ATileRangeWritesOnlyItsColumns) {
  std::mt19937 rng(5);
  const ModelWeights w = random_weights(96, 29, 4, 32, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(true), packed), "");
  for (int64_t M : {1, 5, 11, 21, 50}) {
    const std::vector<float> x = random_activation(M, w.K, rng);
    const std::vector<float> want = reference_gemm(x, M, w, true, nullptr);
    BlockQuantizedActivation a;
    onebit::quantize_activation_blocks(x.data(), M, w.K, w.block_size, a);
    for (const onebit::W4A8Kernel& kernel : onebit::w4a8_kernels()) {
      if (!kernel.available()) continue;
      // Ranges of an even and an odd count of tiles, from an odd tile, and to the partial last one.
      for (const auto& [begin, end] : {std::pair{1, 3}, {1, 2}, {0, 3}, {2, 4}, {3, 4}}) {
        std::vector<float> y(static_cast<size_t>(M * w.N), -7.0f);
        kernel.run(a, packed, begin, end, nullptr, y.data(), w.N);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < w.N; ++n) {
            const bool inside = n >= 8 * begin && n < 8 * end;
            ASSERT_EQ(y[m * w.N + n], inside ? want[m * w.N + n] : -7.0f)
                << kernel.name << " tiles [" << begin << ", " << end << ") m=" << m << " n=" << n;
          }
      }
    }
  }
}

// Every row count a zmm pass splits differently (2..40: groups of 8 and every rest, and a few
// large), over tile ranges that start odd, hold one tile or none, at a y stride wider than N: the
// range's columns equal the contract, every other float (between rows and after the last) keeps
// its guard bits. Prepared rows and per-task rows alike.
TEST(W4A8Kernels, EveryRowCountAndTileRangeEqualsTheContract) {
  std::mt19937 rng(17);
  for (int64_t bits : {4, 8}) {
    const bool zp = bits == 8;
    const ModelWeights w =
        random_weights(bits == 4 ? 83 : 150, 45, bits, bits == 4 ? 32 : 64, rng);  // 6 tiles, the last of 5 columns
    PackedNBits packed;
    ASSERT_EQ(onebit::pack_nbits_weights(w.view(zp), packed), "");
    std::vector<float> bias(static_cast<size_t>(w.N));
    for (auto& v : bias) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<int64_t> rows;
    for (int64_t M = 2; M <= 40; ++M) rows.push_back(M);
    for (int64_t M : {65, 300}) rows.push_back(M);
    const int64_t y_stride = w.N + 11;
    const float guard = -7.0f;
    for (const int64_t M : rows) {
      const std::vector<float> x = random_activation(M, w.K, rng);
      const std::vector<float> want = reference_gemm(x, M, w, zp, bias.data());
      BlockQuantizedActivation a;
      onebit::quantize_activation_blocks(x.data(), M, w.K, w.block_size, a);
      for (const KernelCall& call : kernel_calls(a)) {
        for (const auto& [begin, end] :
             std::vector<std::pair<int64_t, int64_t>>{{0, 6}, {1, 6}, {1, 4}, {3, 4}, {5, 6}, {2, 2}, {0, 1}, {3, 6}}) {
          std::vector<float> y(static_cast<size_t>(M * y_stride + 8), guard);
          call.kernel->run(call.a, packed, begin, end, bias.data(), y.data(), y_stride);
          for (size_t i = 0; i < y.size(); ++i) {
            const int64_t m = static_cast<int64_t>(i) / y_stride, n = static_cast<int64_t>(i) % y_stride;
            const bool inside = m < M && n < w.N && n >= begin * 8 && n < end * 8;
            const float expected = inside ? want[static_cast<size_t>(m * w.N + n)] : guard;
            ASSERT_EQ(std::memcmp(&y[i], &expected, sizeof(float)), 0)
                << call.name() << " bits=" << bits << " M=" << M << " tiles [" << begin << ", " << end << ") m=" << m
                << " n=" << n << ": " << y[i] << " vs " << expected;
          }
        }
      }
    }
  }
}

// Rows prepared for one call must not serve the next even where the two layouts are the same
// size (9 rows × K 80 in blocks of 16, 9 rows × K 96 in blocks of 32: 2 groups of 8 rows × 30 values).
TEST(W4A8Kernels, RowsPreparedForAnotherShapeOfTheSameSizeAreNotRead) {
  std::mt19937 rng(19);
  const ModelWeights w = random_weights(96, 40, 4, 32, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(true), packed), "");
  for (const onebit::W4A8Kernel& kernel : onebit::w4a8_kernels()) {
    if (!kernel.available() || kernel.prepare_rows == nullptr) continue;
    BlockQuantizedActivation a;
    onebit::quantize_activation_blocks(random_activation(9, 80, rng).data(), 9, 80, 16, a);
    kernel.prepare_rows(a);
    const size_t stale_size = a.row_groups.size();
    const std::vector<float> x = random_activation(9, w.K, rng);
    onebit::quantize_activation_blocks(x.data(), 9, w.K, w.block_size, a);
    BlockQuantizedActivation fresh = a;
    kernel.prepare_rows(fresh);
    EXPECT_EQ(fresh.row_groups.size(), stale_size) << "the two layouts are meant to be the same size";
    std::vector<float> y(static_cast<size_t>(9 * w.N));
    kernel.run(a, packed, 0, packed.tiles(), nullptr, y.data(), w.N);
    EXPECT_EQ(y, reference_gemm(x, 9, w, true, nullptr)) << kernel.name;
  }
}

// One activation read by several threads at once, as the engine's tasks do: prepared (shared
// layout) and not (each thread lays the rows out in its own storage, between calls of other shapes).
TEST(W4A8Kernels, ThreadsSharingOneActivationEachGetTheContract) {
  std::mt19937 rng(23);
  const ModelWeights w = random_weights(200, 61, 4, 64, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(true), packed), "");
  const std::vector<float> x = random_activation(37, w.K, rng);
  const std::vector<float> want = reference_gemm(x, 37, w, true, nullptr);
  BlockQuantizedActivation shared;
  onebit::quantize_activation_blocks(x.data(), 37, w.K, w.block_size, shared);
  for (const KernelCall& call : kernel_calls(shared)) {
    std::vector<int> wrong(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::mt19937 own(static_cast<uint32_t>(t));
        for (int i = 0; i < 40; ++i) {
          const int64_t begin = own() % 8, end = begin + own() % (9 - begin);
          std::vector<float> y(static_cast<size_t>(37 * w.N), NAN);
          call.kernel->run(call.a, packed, begin, end, nullptr, y.data(), w.N);
          for (int64_t m = 0; m < 37; ++m)
            for (int64_t n = begin * 8; n < std::min(w.N, end * 8); ++n)
              wrong[t] += std::memcmp(&y[m * w.N + n], &want[m * w.N + n], sizeof(float)) != 0;
          // Another shape on this thread between the shared calls.
          const int64_t rows = 2 + own() % 12;
          const std::vector<float> other = random_activation(rows, w.K, own);
          BlockQuantizedActivation b;
          onebit::quantize_activation_blocks(other.data(), rows, w.K, w.block_size, b);
          std::vector<float> z(static_cast<size_t>(rows * w.N));
          call.kernel->run(b, packed, 0, packed.tiles(), nullptr, z.data(), w.N);
          wrong[t] += z != reference_gemm(other, rows, w, true, nullptr);
        }
      });
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0) << call.name();
  }
}

// Every product at its largest, all of one sign, at block 256: |dot| = 256·127·255 (8-bit weight 255
// and zero point 0, activations all ±1 so q = ±127), the int32 and float(dot) extremes each kernel
// must still hold exactly; weights 0 and 15 / 255, zero points 0 and 15 / 255, symmetric weights
// at both ends (w − 2^(bits−1) = −8 / −128 and 7 / 127). Rows 1, 16, 33 and 49 (AMX from 48).
TEST(W4A8Kernels, ExtremeWeightsAndActivationsEqualTheContract) {
  std::mt19937 rng(29);
  for (int64_t bits : {4, 8})
    for (int64_t bs : {16, 256})
      for (uint8_t w_byte : {uint8_t{0x00}, uint8_t{0xFF}})
        for (int zp_kind = 0; zp_kind < 3; ++zp_kind) {  // symmetric, zero points 0, zero points at the top
          ModelWeights w = random_weights(2 * bs - 3, 21, bits, bs, rng);
          std::fill(w.b.begin(), w.b.end(), w_byte);
          std::fill(w.zero_points.begin(), w.zero_points.end(), zp_kind == 2 ? uint8_t{0xFF} : uint8_t{0x00});
          const bool zp = zp_kind != 0;
          PackedNBits packed;
          ASSERT_EQ(onebit::pack_nbits_weights(w.view(zp), packed), "");
          for (int64_t M : {1, 16, 33, 49})
            for (float sign : {1.0f, -1.0f}) {
              std::vector<float> x(static_cast<size_t>(M * w.K), sign);
              std::fill(x.begin() + (M - 1) * w.K, x.end(), 0.0f);  // and a zero row
              const std::vector<float> want = reference_gemm(x, M, w, zp, w.scales.data());
              BlockQuantizedActivation a;
              onebit::quantize_activation_blocks(x.data(), M, w.K, w.block_size, a);
              for (const onebit::W4A8Kernel& kernel : onebit::w4a8_kernels()) {
                if (!kernel.available()) continue;
                BlockQuantizedActivation call = a;
                if (kernel.prepare_rows != nullptr) kernel.prepare_rows(call);
                std::vector<float> y(static_cast<size_t>(M * w.N), NAN);
                kernel.run(call, packed, 0, packed.tiles(), w.scales.data(), y.data(), w.N);
                ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
                    << kernel.name << " bits=" << bits << " bs=" << bs << " weights 0x" << std::hex << int(w_byte)
                    << std::dec << " zero points " << zp_kind << " M=" << M << " x=" << sign;
              }
            }
        }
}

// K so long that the AMX kernel unpacks a tile range in parts (256 KiB of B tiles: 6 tiles at K
// 4100), over ranges that start odd and parts that end in an odd tile: every column equals the
// contract, at 16 and 17 rows.
TEST(W4A8Kernels, LongKSplitsATileRangeIntoPartsThatEqualTheContract) {
  std::mt19937 rng(31);
  for (int64_t bits : {4, 8}) {
    const bool zp = bits == 4;
    const ModelWeights w = random_weights(4100, 8 * 11 + 3, bits, 64, rng);  // 12 tiles, the last of 3 columns
    PackedNBits packed;
    ASSERT_EQ(onebit::pack_nbits_weights(w.view(zp), packed), "");
    for (int64_t M : {16, 49}) {
      const std::vector<float> x = random_activation(M, w.K, rng);
      const std::vector<float> want = reference_gemm(x, M, w, zp, nullptr);
      BlockQuantizedActivation a;
      onebit::quantize_activation_blocks(x.data(), M, w.K, w.block_size, a);
      for (const onebit::W4A8Kernel& kernel : onebit::w4a8_kernels()) {
        if (!kernel.available()) continue;
        for (const auto& [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 12}, {1, 12}, {3, 10}, {0, 9}}) {
          std::vector<float> y(static_cast<size_t>(M * w.N), -7.0f);
          kernel.run(a, packed, begin, end, nullptr, y.data(), w.N);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < w.N; ++n) {
              const float expected = n >= begin * 8 && n < end * 8 ? want[m * w.N + n] : -7.0f;
              ASSERT_EQ(std::memcmp(&y[m * w.N + n], &expected, sizeof(float)), 0)
                  << kernel.name << " bits=" << bits << " M=" << M << " tiles [" << begin << ", " << end << ") m=" << m
                  << " n=" << n;
            }
        }
      }
    }
  }
}

// The AMX kernels load their tile configuration per call (W4A8: A tiles of block bytes up to 64;
// A8W8: a configuration of its own): threads each alternating W4A8 calls of blocks 16 and 128
// with int8 gemm_q8 calls (the selected kernel: AMX where the CPU has it) get both contracts.
TEST(W4A8Kernels, CallsAlternatingWithTheInt8KernelOnEachThreadEqualTheContract) {
  std::mt19937 rng(37);
  std::vector<ModelWeights> weights;
  std::vector<PackedNBits> packed(2);
  for (int64_t bs : {16, 128}) weights.push_back(random_weights(3 * bs + 5, 27, 8 - 4 * (bs == 16), bs, rng));
  for (size_t i = 0; i < 2; ++i) ASSERT_EQ(onebit::pack_nbits_weights(weights[i].view(i == 0), packed[i]), "");
  const int64_t q_M = 20, q_K = 70, q_N = 33;
  const std::vector<int32_t> q_x = onebit_test::random_values(rng, q_M * q_K, onebit::QType::Int8);
  const std::vector<int32_t> q_w = onebit_test::random_values(rng, q_K * q_N, onebit::QType::Int8);
  const std::vector<uint8_t> q_x_bytes = onebit_test::encode(q_x, onebit::QType::Int8);
  const std::vector<uint8_t> q_w_bytes = onebit_test::encode(q_w, onebit::QType::Int8);
  const onebit::PackedWeights q_packed =
      onebit::pack_weights(q_w_bytes.data(), onebit::QType::Int8, q_K, q_N, false, nullptr, 0);
  std::vector<int32_t> q_want(static_cast<size_t>(q_M * q_N), 0);
  for (int64_t m = 0; m < q_M; ++m)
    for (int64_t n = 0; n < q_N; ++n)
      for (int64_t k = 0; k < q_K; ++k) q_want[m * q_N + n] += q_x[m * q_K + k] * q_w[k * q_N + n];
  std::vector<std::vector<float>> x, want;
  for (size_t i = 0; i < 2; ++i) {
    x.push_back(random_activation(49 + 14 * i, weights[i].K, rng));  // AMX from 48 rows
    want.push_back(reference_gemm(x[i], 49 + 14 * i, weights[i], i == 0, nullptr));
  }
  std::vector<int> wrong(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        const size_t which = static_cast<size_t>((i + t) % 2);
        const int64_t M = static_cast<int64_t>(x[which].size()) / weights[which].K;
        std::vector<float> y(static_cast<size_t>(M * weights[which].N));
        onebit::gemm_w4a8(x[which].data(), M, packed[which], nullptr, y.data());
        wrong[t] += std::memcmp(y.data(), want[which].data(), y.size() * sizeof(float)) != 0;
        std::vector<int32_t> acc(static_cast<size_t>(q_M * q_N));
        onebit::gemm_q8_host({q_x_bytes.data(), onebit::QType::Int8, 0, q_M}, q_packed, acc.data());
        wrong[t] += acc != q_want;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(2, 0)) << onebit::selected_w4a8_kernel().name;
}

TEST(W4A8Kernels, QuantizingAgainDropsTheRowsPreparedForTheLastCall) {
  std::mt19937 rng(13);
  const ModelWeights w = random_weights(96, 40, 4, 32, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(false), packed), "");
  BlockQuantizedActivation a;
  onebit::quantize_activation_blocks(random_activation(9, w.K, rng).data(), 9, w.K, w.block_size, a);
  onebit::prepare_w4a8_rows(a);
  const std::vector<float> x = random_activation(9, w.K, rng);  // same shape, new values
  onebit::quantize_activation_blocks(x.data(), 9, w.K, w.block_size, a);
  EXPECT_TRUE(a.row_groups.empty());
  std::vector<float> y(static_cast<size_t>(9 * w.N));
  onebit::gemm_w4a8_tiles(a, packed, 0, packed.tiles(), nullptr, y.data(), w.N);
  EXPECT_EQ(y, reference_gemm(x, 9, w, false, nullptr));
}

TEST(W4A8Kernels, TheWholeMatrixEntryQuantizesAndRunsEveryTile) {
  std::mt19937 rng(9);
  const ModelWeights w = random_weights(200, 45, 4, 64, rng);
  PackedNBits packed;
  ASSERT_EQ(onebit::pack_nbits_weights(w.view(false), packed), "");
  const std::vector<float> x = random_activation(3, w.K, rng);
  std::vector<float> y(static_cast<size_t>(3 * w.N));
  onebit::gemm_w4a8(x.data(), 3, packed, w.scales.data(), y.data());
  EXPECT_EQ(y, reference_gemm(x, 3, w, false, w.scales.data()));
}

using Quantizer = void (*)(const float*, int64_t, int64_t, int64_t, BlockQuantizedActivation&);

TEST(W4A8Quantize, PerRowAndBlockMaxOver127RoundHalfToEven) {
  std::mt19937 rng(3);
  for (const Quantizer quantize : {onebit::quantize_activation_blocks, onebit::quantize_activation_blocks_portable}) {
    // K = 70: blocks of 32, 32 and a ragged 6 (whole 8-lane groups and a scalar tail).
    for (const int64_t K : {70, 77, 256}) {
      const int64_t M = 3, bs = 32, k_blocks = (K + bs - 1) / bs;
      std::vector<float> x = random_activation(M, K, rng);
      BlockQuantizedActivation a;
      quantize(x.data(), M, K, bs, a);
      const ReferenceQuantized want = reference_quantize(x, M, K, bs);
      ASSERT_EQ(a.row_stride(), k_blocks * bs);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t b = 0; b < k_blocks; ++b) {
          int32_t sum = 0;
          for (int64_t k = b * bs; k < (b + 1) * bs; ++k) {
            const int32_t q = a.q[m * a.row_stride() + k];
            EXPECT_EQ(q, k < K ? want.q[m * K + k] : 0) << m << "," << k;
            sum += q;
          }
          EXPECT_EQ(a.sum[m * k_blocks + b], sum);
          EXPECT_EQ(a.scale[m * k_blocks + b], want.scale[m * k_blocks + b]);
        }
      // Row 0's first block has max 127: scale 1, and the ties 0.5 and -2.5 round to 0 and -2.
      EXPECT_EQ(a.scale[0], 1.0f);
      EXPECT_EQ(a.q[0], 127);
      EXPECT_EQ(a.q[1], 0);
      EXPECT_EQ(a.q[2], -2);
    }
    // An all-zero block quantizes to zeros with scale 0 (no division by zero).
    std::vector<float> zeros(32, 0.0f);
    BlockQuantizedActivation a;
    quantize(zeros.data(), 1, 32, 32, a);
    EXPECT_EQ(a.scale[0], 0.0f);
    EXPECT_EQ(a.sum[0], 0);
    // A block so small that 127/amax overflows (amax 1e-37 < 127/FLT_MAX) quantizes to zeros too,
    // its 0 included (an infinite factor would saturate every value and make 0·inf a NaN).
    std::vector<float> tiny(32, 1e-37f);
    tiny[3] = 0.0f;
    tiny[4] = -1e-37f;
    quantize(tiny.data(), 1, 32, 32, a);
    for (int k = 0; k < 32; ++k) EXPECT_EQ(a.q[k], 0) << k;
    EXPECT_EQ(a.sum[0], 0);
  }
}

TEST(W4A8Pack, ReadsBackTheModelValues) {
  std::mt19937 rng(11);
  for (int64_t bits : {4, 8}) {
    const ModelWeights w = random_weights(77, 19, bits, 16, rng);
    PackedNBits packed;
    ASSERT_EQ(onebit::pack_nbits_weights(w.view(true), packed), "");
    EXPECT_EQ(packed.tiles(), 3);
    EXPECT_EQ(packed.k_blocks(), 5);
    // 4 bits stay half a byte a weight: tile block = 8 columns × 16 k × bits/8, + 8 scales + 8 zero points.
    EXPECT_EQ(packed.block_stride(), 8 * 16 * bits / 8 + 32 + 8);
    for (int64_t n = 0; n < w.N; ++n) {
      for (int64_t k = 0; k < w.K; ++k) ASSERT_EQ(packed.weight(k, n), w.weight(k, n)) << k << "," << n;
      for (int64_t b = 0; b < 5; ++b) {
        EXPECT_EQ(packed.scale(b, n), w.scales[n * 5 + b]);
        EXPECT_EQ(packed.zero_point(b, n), w.zero_point(b, n, true));
      }
    }
    ASSERT_EQ(onebit::pack_nbits_weights(w.view(false), packed), "");
    EXPECT_EQ(packed.zero_point(2, 4), 1 << (bits - 1));
  }
}

TEST(W4A8Pack, RejectsMalformedInputsNamingWhat) {
  std::mt19937 rng(2);
  const ModelWeights w = random_weights(40, 5, 4, 16, rng);  // 3 blocks: B 5·3·8 bytes, zp 5·2 bytes
  const auto error = [](NBitsWeights v) {
    PackedNBits packed;
    packed.K = 99;
    const std::string message = onebit::pack_nbits_weights(v, packed);
    if (!message.empty()) {
      EXPECT_EQ(packed.K, 99) << "a rejected pack leaves its output untouched";
    }
    return message;
  };
  NBitsWeights v = w.view(true);
  EXPECT_EQ(error(v), "");
  v.bits = 3;
  EXPECT_EQ(error(v), "MatMulNBits bits=3: only 4 and 8 are supported");
  v = w.view(true), v.block_size = 8;
  EXPECT_EQ(error(v), "MatMulNBits block_size=8: must be a power of two in [16, 256]");
  v = w.view(true), v.block_size = 48;
  EXPECT_EQ(error(v), "MatMulNBits block_size=48: must be a power of two in [16, 256]");
  v = w.view(true), v.K = 0;
  EXPECT_EQ(error(v), "MatMulNBits K=0 N=5: both must be positive");
  v = w.view(true), v.b_bytes -= 1;
  EXPECT_EQ(error(v), "MatMulNBits B (uint8 bytes): 119 values, expected 120");
  v = w.view(true), v.b = nullptr;
  EXPECT_EQ(error(v), "MatMulNBits B (uint8 bytes): 0 values, expected 120");
  v = w.view(true), v.K = 49;  // 4 blocks: B too short for it
  EXPECT_EQ(error(v), "MatMulNBits B (uint8 bytes): 120 values, expected 160");
  v = w.view(true), v.scale_count = 5;
  EXPECT_EQ(error(v), "MatMulNBits scales: 5 values, expected 15");
  v = w.view(true), v.zero_point_bytes = 15;  // one byte per block is the 8-bit layout
  EXPECT_EQ(error(v), "MatMulNBits zero_points (uint8 bytes): 15 values, expected 10");
}

TEST(W4A8KernelSelection, PicksTheForcedKernelElseTheFirstThisCpuRuns) {
  const char* forced = std::getenv("ONEBIT_KERNEL");
  std::string want;
  for (const onebit::W4A8Kernel& k : onebit::w4a8_kernels())
    if (forced != nullptr && k.available() && std::string(forced) == k.name) want = k.name;
  for (const onebit::W4A8Kernel& k : onebit::w4a8_kernels())
    if (want.empty() && k.available()) want = k.name;
  EXPECT_EQ(onebit::selected_w4a8_kernel().name, want);
}

// The kernel tests above run every kernel this CPU can; this one names those it cannot.
TEST(W4A8KernelSelection, KernelsThisCpuCannotRunAreSkippedByName) {
  std::string skipped;
  for (const onebit::W4A8Kernel& k : onebit::w4a8_kernels())
    if (!k.available()) skipped += std::string(skipped.empty() ? "" : ", ") + k.name;
  if (!skipped.empty()) GTEST_SKIP() << "not run on this CPU: " << skipped;
  EXPECT_STREQ(onebit::w4a8_kernels().back().name, "portable");
}

}  // namespace
