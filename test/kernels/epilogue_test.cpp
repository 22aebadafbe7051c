// SPDX-License-Identifier: Apache-2.0
// Epilogue::apply against hand-computed values and the double reference: float output,
// int8/uint8 requantization (saturation, round half to even, zero point), int32 copy.
#include "kernels/epilogue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "reference_gemm.h"
#include "test_operands.h"

namespace onebit_test {
namespace {

using onebit::Epilogue;
using onebit::OutputKind;

constexpr uint8_t kSentinelByte = 0xA5;
constexpr size_t kGuardBytes = 32;

const char* kind_name(OutputKind k) {
  switch (k) {
    case OutputKind::Float32:
      return "float32";
    case OutputKind::Int8:
      return "int8";
    case OutputKind::Uint8:
      return "uint8";
    case OutputKind::Int32:
      return "int32";
  }
  return "?";
}

QRange output_range(OutputKind k) { return k == OutputKind::Uint8 ? QRange{0, 255} : QRange{-128, 127}; }

// Applies the epilogue into a buffer with a sentinel tail, checks the tail is untouched and
// returns the M×N outputs.
template <typename T>
std::vector<T> apply_guarded(const Epilogue& e, const std::vector<int32_t>& acc, int64_t M, int64_t N) {
  const size_t cells = static_cast<size_t>(M * N);
  std::vector<uint8_t> buffer(cells * sizeof(T) + kGuardBytes, kSentinelByte);
  e.apply(acc.data(), M, N, buffer.data());
  for (size_t i = cells * sizeof(T); i < buffer.size(); ++i) {
    if (buffer[i] != kSentinelByte) {
      ADD_FAILURE() << kind_name(e.kind) << " epilogue wrote past M×N (M=" << M << " N=" << N << ") at byte " << i;
      break;
    }
  }
  std::vector<T> out(cells);
  if (cells != 0) std::memcpy(out.data(), buffer.data(), cells * sizeof(T));
  return out;
}

// Quantized outputs widened to int32 for comparison.
std::vector<int32_t> apply_quantized(const Epilogue& e, const std::vector<int32_t>& acc, int64_t M, int64_t N) {
  if (e.kind == OutputKind::Uint8) {
    const auto out = apply_guarded<uint8_t>(e, acc, M, N);
    return {out.begin(), out.end()};
  }
  const auto out = apply_guarded<int8_t>(e, acc, M, N);
  return {out.begin(), out.end()};
}

ReferenceEpilogue reference_of(const Epilogue& e) {
  ReferenceEpilogue r;
  r.scale = e.scale;
  r.bias = e.bias;
  r.y_scale = e.y_scale;
  r.y_zero_point = e.y_zero_point;
  return r;
}

// A single-column (N = 1) quantizing epilogue over a list of accumulators.
Epilogue column_epilogue(OutputKind kind, double scale, double y_scale, int32_t y_zero_point,
                         std::optional<double> bias = std::nullopt) {
  Epilogue e;
  e.kind = kind;
  e.scale = {scale};
  if (bias) e.bias = {*bias};
  e.y_scale = y_scale;
  e.y_zero_point = y_zero_point;
  return e;
}

// Checks the epilogue and the reference both give `want` for each accumulator.
void expect_quantized(const Epilogue& e, const std::vector<int32_t>& acc, const std::vector<int32_t>& want) {
  ASSERT_EQ(acc.size(), want.size());
  const int64_t M = static_cast<int64_t>(acc.size());
  const std::vector<int32_t> got = apply_quantized(e, acc, M, 1);
  const ReferenceEpilogue ref = reference_of(e);
  const QRange r = output_range(e.kind);
  for (size_t i = 0; i < acc.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << kind_name(e.kind) << " acc=" << acc[i] << " scale=" << e.scale[0]
                               << " y_scale=" << e.y_scale << " y_zero_point=" << e.y_zero_point;
    EXPECT_EQ(ref.to_quantized(acc[i], 0, r.lo, r.hi), want[i]) << "reference disagrees, acc=" << acc[i];
  }
}

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

// ---------------------------------------------------------------------------------------------

TEST(OutputElementSize, MatchesOutputTypes) {
  EXPECT_EQ(onebit::output_element_size(OutputKind::Float32), sizeof(float));
  EXPECT_EQ(onebit::output_element_size(OutputKind::Int32), sizeof(int32_t));
  EXPECT_EQ(onebit::output_element_size(OutputKind::Int8), sizeof(int8_t));
  EXPECT_EQ(onebit::output_element_size(OutputKind::Uint8), sizeof(uint8_t));
}

TEST(EpilogueFloat, HandComputedValues) {
  Epilogue e;
  e.kind = OutputKind::Float32;
  e.scale = {0.5};
  e.bias = {0.25};
  EXPECT_EQ(apply_guarded<float>(e, {3}, 1, 1), (std::vector<float>{1.75f}));

  // Per-column scale, without then with bias, over two rows.
  e.scale = {1.0, 0.5, 0.25};
  e.bias = {};
  EXPECT_EQ(apply_guarded<float>(e, {2, 2, 2, -4, 4, 8}, 2, 3), (std::vector<float>{2.f, 1.f, 0.5f, -4.f, 2.f, 2.f}));
  e.bias = {1.0, 2.0, 3.0};
  EXPECT_EQ(apply_guarded<float>(e, {2, 2, 2, -4, 4, 8}, 2, 3), (std::vector<float>{3.f, 3.f, 3.5f, -3.f, 4.f, 5.f}));
}

TEST(EpilogueFloat, RoundsToFloatOnceAfterTheBias) {
  // 2^24 + 1 is not a float. Computed in double then rounded once, acc·1 - 1 = 2^24 exactly;
  // rounding acc to float first would give 2^24 - 1.
  Epilogue e;
  e.kind = OutputKind::Float32;
  e.scale = {1.0};
  e.bias = {-1.0};
  EXPECT_EQ(apply_guarded<float>(e, {16777217}, 1, 1), (std::vector<float>{16777216.f}));
  // Without bias the double value rounds (half to even) to 2^24.
  e.bias = {};
  EXPECT_EQ(apply_guarded<float>(e, {16777217}, 1, 1), (std::vector<float>{16777216.f}));
}

TEST(EpilogueFloat32Steps, RoundsAfterEachStepLikeTheOperators) {
  // quantize_dynamic's chain: Cast(acc) to float, then Mul, then Add, each rounded to float32.
  // The same case as above: Cast rounds 2^24 + 1 to 2^24 (even), so the result is 2^24 - 1.
  Epilogue e;
  e.kind = OutputKind::Float32;
  e.scale = {1.0};
  e.bias = {-1.0};
  e.take_float32_steps();
  EXPECT_EQ(apply_guarded<float>(e, {16777217}, 1, 1), (std::vector<float>{16777215.f}));

  // Random operands: equal to the float32 steps written out, and unlike the one-rounding double
  // path on some of them (else the flag would not be tested).
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> acc_value(-3000000, 3000000);
  std::uniform_real_distribution<float> scale_value(1e-4f, 1e-2f), bias_value(-5.f, 5.f);
  const int64_t M = 7, N = 33;
  std::vector<int32_t> acc(M * N);
  for (auto& a : acc) a = acc_value(rng);
  Epilogue in_double;
  in_double.kind = OutputKind::Float32;
  for (int64_t n = 0; n < N; ++n)
    in_double.scale.push_back(scale_value(rng)), in_double.bias.push_back(bias_value(rng));
  e = in_double;
  e.take_float32_steps();
  const std::vector<float> got = apply_guarded<float>(e, acc, M, N);
  const std::vector<float> one_rounding = apply_guarded<float>(in_double, acc, M, N);
  int differ = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(m * N + n);
      volatile float product = static_cast<float>(acc[i]) * e.scale32[n];
      const float expected = product + e.bias32[n];
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expected)) << "m=" << m << " n=" << n;
      differ += got[i] != one_rounding[i];
    }
  EXPECT_GT(differ, 0);
}

TEST(EpilogueFloat32Steps, QuantizedOutputDividesInFloat32) {
  Epilogue e;
  e.kind = OutputKind::Uint8;
  e.scale = {0.5};
  e.take_float32_steps();
  e.y_scale = 0.5;
  e.y_zero_point = 10;
  // 5·0.5 = 2.5, / 0.5 = 5, + 10; 255 saturates; -100 → -100 + 10 saturates at 0.
  EXPECT_EQ(apply_guarded<uint8_t>(e, {5, 1000, -100}, 1, 3), (std::vector<uint8_t>{15, 255, 0}));
}

TEST(EpilogueFloat, ExtremeAccumulators) {
  Epilogue e;
  e.kind = OutputKind::Float32;
  e.scale = {1.0};
  EXPECT_EQ(apply_guarded<float>(e, {kMin, kMax, 0, -1}, 1, 4),
            (std::vector<float>{-2147483648.f, 2147483648.f, 0.f, -1.f}));
}

TEST(EpilogueInt32, CopiesAccumulatorsIgnoringScales) {
  Epilogue e;
  e.kind = OutputKind::Int32;
  e.scale = {0.5, 3.0};
  e.bias = {1.0, -7.0};
  e.y_scale = 0.25;
  e.y_zero_point = 9;
  const std::vector<int32_t> acc = {kMin, kMax, 0, -1, 12345, -54321};
  EXPECT_EQ(apply_guarded<int32_t>(e, acc, 3, 2), acc);
}

TEST(EpilogueZeroRows, WritesNothingForAnyKind) {
  for (OutputKind kind : {OutputKind::Float32, OutputKind::Int8, OutputKind::Uint8, OutputKind::Int32}) {
    Epilogue e;
    e.kind = kind;
    e.scale = {0.5};
    e.bias = {1.0, 2.0, 3.0};
    std::vector<uint8_t> out(64, kSentinelByte);
    const std::vector<int32_t> acc(3, 7);
    e.apply(acc.data(), 0, 3, out.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinelByte) << kind_name(kind) << " byte " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// Saturation.

TEST(EpilogueSaturation, Int8BothEnds) {
  const Epilogue e = column_epilogue(OutputKind::Int8, 1.0, 1.0, 0);
  expect_quantized(e, {127, 128, 1000000, kMax, -128, -129, -1000000, kMin},
                   {127, 127, 127, 127, -128, -128, -128, -128});
  // Ties just outside the range round (half to even) and then saturate: 127.5 -> 128 -> 127,
  // 126.5 -> 126, -128.5 -> -128, -127.5 -> -128.
  const Epilogue half = column_epilogue(OutputKind::Int8, 0.5, 1.0, 0);
  expect_quantized(half, {255, 253, -257, -255}, {127, 126, -128, -128});
}

TEST(EpilogueSaturation, Uint8BothEnds) {
  const Epilogue e = column_epilogue(OutputKind::Uint8, 1.0, 1.0, 0);
  expect_quantized(e, {0, 255, 256, 1000000, kMax, -1, -1000000, kMin}, {0, 255, 255, 255, 255, 0, 0, 0});
}

TEST(EpilogueSaturation, WithZeroPoint) {
  // The zero point is added before saturating.
  const Epilogue u = column_epilogue(OutputKind::Uint8, 1.0, 1.0, 128);
  expect_quantized(u, {0, 127, 128, -128, -129, kMax, kMin}, {128, 255, 255, 0, 0, 255, 0});
  const Epilogue s = column_epilogue(OutputKind::Int8, 1.0, 1.0, -5);
  expect_quantized(s, {0, -123, -124, 132, 133, kMax, kMin}, {-5, -128, -128, 127, 127, 127, -128});
}

TEST(EpilogueSaturation, FarOutOfRangeViaScaleAndBias) {
  // Huge scale and bias push v / y_scale to ±1e12 and beyond.
  const Epilogue up = column_epilogue(OutputKind::Int8, 1e6, 1e-3, 3, 1e9);
  expect_quantized(up, {1, 1000, kMax}, {127, 127, 127});
  const Epilogue down = column_epilogue(OutputKind::Uint8, 1e6, 1e-3, 200, -1e9);
  expect_quantized(down, {-1, -1000, kMin}, {0, 0, 0});
}

// ---------------------------------------------------------------------------------------------
// Non-finite bias. The expected values are what ORT's QuantizeLinear (CPU EP, 1.30) gives for
// NaN, +Inf and -Inf: the type's minimum, maximum and minimum, whatever the zero point.

TEST(EpilogueNonFinite, QuantizedOutputMatchesQuantizeLinear) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    OutputKind kind;
    int32_t y_zero_point;
    int32_t lo, hi;
  };
  for (const Case c : {Case{OutputKind::Int8, 0, -128, 127}, Case{OutputKind::Int8, 3, -128, 127},
                       Case{OutputKind::Uint8, 0, 0, 255}, Case{OutputKind::Uint8, 3, 0, 255}}) {
    Epilogue e;
    e.kind = c.kind;
    e.scale = {0.5};
    e.bias = {nan, -nan, inf, -inf, 1.0};
    e.y_scale = 0.5;
    e.y_zero_point = c.y_zero_point;
    const std::vector<int32_t> acc = {7, -7, 7, 7, 2};  // the last column is finite: (1 + 1) / 0.5 = 4
    EXPECT_EQ(apply_quantized(e, acc, 1, 5), (std::vector<int32_t>{c.lo, c.lo, c.hi, c.lo, 4 + c.y_zero_point}))
        << kind_name(c.kind) << " y_zero_point=" << c.y_zero_point;
  }
}

TEST(EpilogueNonFinite, FloatOutputCarriesThem) {
  Epilogue e;
  e.kind = OutputKind::Float32;
  e.scale = {1.0};
  e.bias = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity()};
  const std::vector<float> out = apply_guarded<float>(e, {1, 1, 1}, 1, 3);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[2], -std::numeric_limits<float>::infinity());
}

// ---------------------------------------------------------------------------------------------
// Round half to even.

TEST(EpilogueRounding, HalvesRoundToEven) {
  // scale 0.5, y_scale 1: odd acc gives exact halves.
  const Epilogue e = column_epilogue(OutputKind::Int8, 0.5, 1.0, 0);
  //                   0.5 1.5 2.5 3.5  -0.5 -1.5 -2.5 -3.5
  expect_quantized(e, {1, 3, 5, 7, -1, -3, -5, -7}, {0, 2, 2, 4, 0, -2, -2, -4});
}

TEST(EpilogueRounding, HalvesFromYScale) {
  // scale 1, y_scale 2: the division makes the halves.
  const Epilogue e = column_epilogue(OutputKind::Int8, 1.0, 2.0, 0);
  expect_quantized(e, {1, 3, 5, -1, -3, -5}, {0, 2, 2, 0, -2, -2});
}

TEST(EpilogueRounding, HalvesFromBias) {
  const Epilogue e = column_epilogue(OutputKind::Int8, 1.0, 1.0, 0, 0.5);
  //                   0.5 1.5 2.5 -0.5 -1.5 -2.5
  expect_quantized(e, {0, 1, 2, -1, -2, -3}, {0, 2, 2, 0, -2, -2});
}

TEST(EpilogueRounding, RoundsBeforeAddingZeroPoint) {
  // round(v / y_scale) + zp, not round(v / y_scale + zp): with zp = 1, 0.5 -> 0 + 1 = 1 (not 2).
  const Epilogue s = column_epilogue(OutputKind::Int8, 0.5, 1.0, 1);
  //                   0.5 1.5 -0.5 -1.5
  expect_quantized(s, {1, 3, -1, -3}, {1, 3, 1, -1});
  const Epilogue u = column_epilogue(OutputKind::Uint8, 0.5, 1.0, 128);
  expect_quantized(u, {1, 3, 5, -1, -3}, {128, 130, 130, 128, 126});
}

TEST(EpilogueRounding, EveryHalfInRange) {
  // k + 0.5 for k in [-200, 200): half to even is k for even k, k + 1 for odd k; then saturate.
  for (OutputKind kind : {OutputKind::Int8, OutputKind::Uint8}) {
    const int32_t zp = kind == OutputKind::Uint8 ? 100 : -3;
    const QRange r = output_range(kind);
    const Epilogue e = column_epilogue(kind, 0.5, 1.0, zp);
    std::vector<int32_t> acc, want;
    for (int32_t k = -200; k < 200; ++k) {
      acc.push_back(2 * k + 1);
      const int32_t rounded = k % 2 == 0 ? k : k + 1;
      want.push_back(std::clamp(rounded + zp, r.lo, r.hi));
    }
    expect_quantized(e, acc, want);
  }
}

TEST(EpilogueRounding, ExactTiesWithNonDyadicYScale) {
  // With scale = y_scale / 2 (exact) and odd acc, v = acc·y_scale/2 is exact and v / y_scale is
  // exactly k + 0.5. Dividing keeps the tie; multiplying by a rounded 1 / y_scale may not.
  for (float ys : {0.01f, 0.9f, 3.3f}) {
    const Epilogue e = column_epilogue(OutputKind::Int8, double(ys) / 2.0, double(ys), 0);
    std::vector<int32_t> acc, want;
    for (int32_t k = -128; k < 127; ++k) {
      acc.push_back(2 * k + 1);
      want.push_back(std::clamp(k % 2 == 0 ? k : k + 1, -128, 127));
    }
    SCOPED_TRACE("y_scale " + std::to_string(ys));
    expect_quantized(e, acc, want);
  }
}

// A power-of-two y_scale is applied by multiplying with its (exact) reciprocal: the same
// correctly rounded quotient as the division, ties and saturation included, for each arithmetic.
TEST(EpilogueRounding, PowerOfTwoYScaleMatchesTheDivision) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int32_t> acc_value(-2000000, 2000000);
  std::uniform_real_distribution<double> scale_value(1e-4, 1.0);
  const int64_t M = 5, N = 37;
  std::vector<int32_t> acc(M * N);
  for (auto& a : acc) a = acc_value(rng);
  acc[0] = 3;  // with scale 0.5 and y_scale 1: 1.5, a tie (to 2)
  acc[1] = 5;  // 2.5 (to 2)
  for (const double y_scale : {1.0, 0.5, 0.25, 0x1p-10, 0x1p20, 0x1p-126, 0x1p-140}) {
    for (const bool float32_steps : {false, true}) {
      Epilogue e;
      e.kind = OutputKind::Int8;
      e.scale.assign(N, 0.5);
      for (int64_t n = 2; n < N; ++n) e.scale[n] = static_cast<float>(scale_value(rng));
      e.y_scale = y_scale;
      e.y_zero_point = -3;
      if (float32_steps) e.take_float32_steps();
      const std::vector<int32_t> got = apply_quantized(e, acc, M, N);
      for (int64_t i = 0; i < M * N; ++i) {
        const int64_t n = i % N;
        double q;
        if (float32_steps) {
          const float v = static_cast<float>(acc[i]) * e.scale32[n];
          q = std::nearbyint(v / static_cast<float>(y_scale)) - 3.0f;
        } else {
          q = std::nearbyint(double(acc[i]) * e.scale[n] / y_scale) - 3.0;
        }
        const int32_t expected = static_cast<int32_t>(std::clamp(q, -128.0, 127.0));
        ASSERT_EQ(got[i], expected) << "y_scale=" << y_scale << " float32_steps=" << float32_steps << " i=" << i;
      }
    }
  }
}

TEST(EpilogueRounding, KeepsDoublePrecisionBeforeRounding) {
  // v = 5·(0.5 + 2^-40) = 2.5 + 5·2^-40: just above the tie, so it rounds to 3. Rounding v to
  // float first would make it the tie 2.5 and give 2.
  const double scale = 0.5 + std::ldexp(1.0, -40);
  expect_quantized(column_epilogue(OutputKind::Int8, scale, 1.0, 0), {5, -5}, {3, -3});
  expect_quantized(column_epilogue(OutputKind::Uint8, scale, 1.0, 10), {5, -5}, {13, 7});
}

// ---------------------------------------------------------------------------------------------
// Random epilogues against the double reference, bit for bit.

using RandomParam = std::tuple<OutputKind, bool /*per_column*/, bool /*bias*/>;

class EpilogueRandom : public ::testing::TestWithParam<RandomParam> {};

// Accumulators of several magnitudes, including the int32 extremes.
std::vector<int32_t> random_accumulators(std::mt19937& rng, size_t count) {
  std::vector<int32_t> acc(count);
  std::uniform_int_distribution<int32_t> small(-5000, 5000), medium(-(1 << 20), 1 << 20), full(kMin, kMax);
  for (size_t i = 0; i < count; ++i) {
    switch (i % 3) {
      case 0:
        acc[i] = small(rng);
        break;
      case 1:
        acc[i] = medium(rng);
        break;
      default:
        acc[i] = full(rng);
        break;
    }
  }
  acc[0] = kMin;
  acc[count - 1] = kMax;
  return acc;
}

TEST_P(EpilogueRandom, MatchesDoubleReference) {
  const auto [kind, per_column, with_bias] = GetParam();
  std::mt19937 rng(100u * unsigned(kind) + 10u * unsigned(per_column) + unsigned(with_bias));
  const int64_t shapes[][2] = {{1, 1}, {1, 129}, {7, 5}, {36, 31}, {100, 64}};
  size_t in_range = 0, total = 0;
  for (const auto& shape : shapes) {
    const int64_t M = shape[0], N = shape[1];
    Epilogue e;
    e.kind = kind;
    // The EP's scale is the exact double product of two float32 scales.
    const double s_x = random_float_scale(rng, 1e-3f, 1e-1f);
    e.scale.resize(per_column ? size_t(N) : 1);
    for (auto& s : e.scale) s = s_x * random_float_scale(rng, 1e-3f, 1e-1f);
    if (with_bias) {
      e.bias.resize(size_t(N));
      for (auto& b : e.bias) b = double(std::uniform_real_distribution<float>(-50.f, 50.f)(rng));
    }
    e.y_scale = random_float_scale(rng, 1e-2f, 2.f);
    const QRange r = output_range(kind);
    e.y_zero_point = kind == OutputKind::Float32 ? 0 : std::uniform_int_distribution<int32_t>(r.lo, r.hi)(rng);
    const ReferenceEpilogue ref = reference_of(e);
    const std::vector<int32_t> acc = random_accumulators(rng, size_t(M * N));

    if (kind == OutputKind::Float32) {
      const std::vector<float> got = apply_guarded<float>(e, acc, M, N);
      for (int64_t i = 0; i < M * N; ++i) {
        const float want = ref.to_float(acc[size_t(i)], i % N);
        ASSERT_EQ(std::bit_cast<uint32_t>(got[size_t(i)]), std::bit_cast<uint32_t>(want))
            << "M=" << M << " N=" << N << " at [" << i / N << "][" << i % N << "] acc=" << acc[size_t(i)] << " got "
            << got[size_t(i)] << " want " << want;
      }
    } else {
      const std::vector<int32_t> got = apply_quantized(e, acc, M, N);
      for (int64_t i = 0; i < M * N; ++i) {
        const int32_t want = ref.to_quantized(acc[size_t(i)], i % N, r.lo, r.hi);
        ASSERT_EQ(got[size_t(i)], want) << "M=" << M << " N=" << N << " at [" << i / N << "][" << i % N
                                        << "] acc=" << acc[size_t(i)];
        in_range += want > r.lo && want < r.hi;
        ++total;
      }
    }
  }
  // The quantized cases must exercise rounding, not only saturation.
  if (kind != OutputKind::Float32) {
    EXPECT_GT(in_range * 10, total) << in_range << " of " << total << " unsaturated";
  }
}

std::string random_name(const ::testing::TestParamInfo<RandomParam>& info) {
  const auto [kind, per_column, with_bias] = info.param;
  return std::string(kind_name(kind)) + (per_column ? "_per_column" : "_per_tensor") +
         (with_bias ? "_bias" : "_no_bias");
}

INSTANTIATE_TEST_SUITE_P(Outputs, EpilogueRandom,
                         ::testing::Combine(::testing::Values(OutputKind::Float32, OutputKind::Int8, OutputKind::Uint8),
                                            ::testing::Bool(), ::testing::Bool()),
                         random_name);

}  // namespace
}  // namespace onebit_test
