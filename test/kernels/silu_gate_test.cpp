// SPDX-License-Identifier: Apache-2.0
// Every SwiGLU gate variant this CPU runs against the operators' values in double (g · σ(g), then
// · up, each product rounded as the graph rounds it), over lengths that end in a partial vector
// and over the values where σ saturates, overflows or is undefined.
// (ORT's own Sigmoid and Muls are the reference in test/python/test_silu_gate.py.)
#include "kernels/silu_gate.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "float_variant_test.h"

namespace onebit {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The graph's value: σ in double, each Mul's product rounded to float.
float reference(float g, float up) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-static_cast<double>(g)));
  const float silu = static_cast<float>(static_cast<double>(g) * static_cast<float>(sigmoid));
  return silu * up;
}

// Distance in units in the last place between two finite floats of one sign (or zeros).
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = std::numeric_limits<int32_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<int32_t>::min() - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

std::vector<float> inputs(size_t n, unsigned seed, float spread) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

using SiluGateVariants = FloatVariantTest<SiluGateVariant, silu_gate_variants>;

TEST_P(SiluGateVariants, WithinFourUlpsOfTheGraphsValue) {
  for (size_t n : {0u, 1u, 3u, 4u, 7u, 15u, 16u, 17u, 33u, 1536u, 4099u}) {
    const std::vector<float> gate = inputs(n, static_cast<unsigned>(n), 6.0f), up = inputs(n, 99u + n, 2.0f);
    std::vector<float> out = up;
    variant.run(gate.data(), out.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const float want = reference(gate[i], up[i]);
      // σ's few-ulp error scaled by two roundings; near 0 the products are tiny, compare absolutely.
      EXPECT_TRUE(ulps(out[i], want) <= 4 || std::fabs(out[i] - want) < 1e-30f)
          << variant.name << " n=" << n << " i=" << i << " gate=" << gate[i] << " up=" << up[i] << ": " << out[i]
          << " against " << want;
    }
  }
}

TEST_P(SiluGateVariants, SaturatedInfiniteAndNanValuesBehaveAsTheOperators) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // gate, up, expected (NaN: any NaN)
  const std::vector<std::array<float, 3>> cases = {
      {0.0f, 5.0f, 0.0f},
      {-0.0f, 5.0f, -0.0f},
      {100.0f, 2.0f, 200.0f},
      {-100.0f, 2.0f, -0.0f},
      {88.0f, 1.0f, 88.0f},
      {-88.0f, 1.0f, -0.0f},
      {kInf, 3.0f, kInf},
      {-kInf, 3.0f, nan},
      {nan, 1.0f, nan},
      {1.0f, nan, nan},
      {1e30f, 1e10f, kInf},
      {2.0f, kInf, kInf},
      {-20.0f, 1.0f, reference(-20.0f, 1.0f)},
      {1e-30f, 1.0f, 5e-31f},
  };
  for (const auto& [gate, up, want] : cases) {
    float out = up;
    variant.run(&gate, &out, 1);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(out)) << variant.name << " gate=" << gate << " up=" << up << ": " << out;
    else
      EXPECT_TRUE(ulps(out, want) <= 4 && std::signbit(out) == std::signbit(want))
          << variant.name << " gate=" << gate << " up=" << up << ": " << out << " against " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(Each, SiluGateVariants, ::testing::Range<size_t>(0, SiluGateVariants::count()),
                         SiluGateVariants::name);

}  // namespace
}  // namespace onebit
