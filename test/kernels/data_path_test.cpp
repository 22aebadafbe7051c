// SPDX-License-Identifier: Apache-2.0
// The whole host data path: quantized x, W, float32 scales and bias -> pack_weights ->
// gemm_q8_host -> Epilogue::apply, against the reference computed from the raw integers in
// double, and within rounding of the ONNX dequantize-then-MatMul value.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/epilogue.h"
#include "kernels/gemm_q8.h"
#include "reference_gemm.h"
#include "test_operands.h"

namespace onebit_test {
namespace {

using onebit::OutputKind;
using onebit::QType;

struct Model {
  int64_t M = 0, K = 0, N = 0;
  QType x_type = QType::Int8, w_type = QType::Int8;
  std::vector<int32_t> x;  // M×K raw
  int32_t zx = 0;
  float s_x = 1.f;
  std::vector<int32_t> w;   // K×N raw
  std::vector<int32_t> zw;  // 1 or N values
  std::vector<float> s_w;   // 1 or N values
  std::vector<float> bias;  // empty or N values
  OutputKind out = OutputKind::Float32;
  float s_y = 1.f;
  int32_t zp_y = 0;

  int32_t zw_of(int64_t n) const { return zw.size() == 1 ? zw[0] : zw[size_t(n)]; }
  float s_w_of(int64_t n) const { return s_w.size() == 1 ? s_w[0] : s_w[size_t(n)]; }
};

QRange output_range(OutputKind k) { return k == OutputKind::Uint8 ? QRange{0, 255} : QRange{-128, 127}; }

Model random_model(std::mt19937& rng, int64_t M, int64_t K, int64_t N, QType x_type, QType w_type, OutputKind out,
                   bool per_column, bool with_bias) {
  Model md;
  md.M = M;
  md.K = K;
  md.N = N;
  md.x_type = x_type;
  md.w_type = w_type;
  md.x = random_values(rng, size_t(M * K), x_type);
  md.zx = random_value(rng, x_type);
  md.s_x = std::uniform_real_distribution<float>(1e-3f, 5e-2f)(rng);
  md.w = random_values(rng, size_t(K * N), w_type);
  const size_t per = per_column ? size_t(N) : 1;
  md.zw = random_values(rng, per, w_type);
  md.zw[0] = range_of(w_type).lo;  // an extreme zero point in every model
  md.s_w.resize(per);
  for (auto& s : md.s_w) s = std::uniform_real_distribution<float>(1e-3f, 5e-2f)(rng);
  if (with_bias) {
    md.bias.resize(size_t(N));
    for (auto& b : md.bias) b = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
  }
  md.out = out;  // s_y and zp_y are set from the outputs' spread once the reference is known
  return md;
}

// What the EP runs: pack, gemm, epilogue. Returns the output bytes.
std::vector<uint8_t> run_data_path(const Model& md, bool w_is_nk) {
  const std::vector<uint8_t> w_bytes = encode(w_is_nk ? transpose(md.w, md.K, md.N) : md.w, md.w_type);
  const onebit::PackedWeights packed =
      onebit::pack_weights(w_bytes.data(), md.w_type, md.K, md.N, w_is_nk, md.zw.data(), int64_t(md.zw.size()));
  const std::vector<uint8_t> x_bytes = encode(md.x, md.x_type);
  onebit::Activation act;
  act.data = x_bytes.data();
  act.type = md.x_type;
  act.zero_point = md.zx;
  act.M = md.M;
  std::vector<int32_t> acc(size_t(md.M * md.N));
  onebit::gemm_q8_host(act, packed, acc.data());

  onebit::Epilogue e;
  e.kind = md.out;
  e.scale.resize(md.s_w.size());
  for (size_t i = 0; i < md.s_w.size(); ++i) e.scale[i] = double(md.s_x) * double(md.s_w[i]);
  e.bias.assign(md.bias.begin(), md.bias.end());
  e.y_scale = md.s_y;
  e.y_zero_point = md.zp_y;
  std::vector<uint8_t> out(size_t(md.M * md.N) * onebit::output_element_size(md.out));
  e.apply(acc.data(), md.M, md.N, out.data());
  return out;
}

using Param = std::tuple<QType, QType, OutputKind, bool /*w_is_nk*/>;

class DataPath : public ::testing::TestWithParam<Param> {};

TEST_P(DataPath, MatchesReferenceFromRawIntegers) {
  const auto [x_type, w_type, out_kind, w_is_nk] = GetParam();
  std::mt19937 rng(1000u * unsigned(out_kind) + 100u * unsigned(x_type) + 10u * unsigned(w_type) + unsigned(w_is_nk));
  const int64_t shapes[][3] = {{0, 17, 5}, {1, 64, 31}, {7, 100, 129}, {36, 1023, 64}, {100, 3, 1}};
  size_t case_index = 0;
  for (const auto& s : shapes) {
    for (bool per_column : {false, true}) {
      const bool with_bias = case_index++ % 2 == 0;
      Model md = random_model(rng, s[0], s[1], s[2], x_type, w_type, out_kind, per_column, with_bias);
      SCOPED_TRACE("M=" + std::to_string(md.M) + " K=" + std::to_string(md.K) + " N=" + std::to_string(md.N) +
                   (per_column ? " per-column" : " per-tensor") + (with_bias ? " bias" : " no bias"));

      // Reference: exact integer accumulators from the raw values, then the documented epilogue in double.
      std::vector<int32_t> zw_cols(size_t(md.N));
      for (int64_t n = 0; n < md.N; ++n) zw_cols[size_t(n)] = md.zw_of(n);
      const std::vector<int64_t> acc = reference_gemm(md.x, md.zx, md.w, zw_cols, md.M, md.K, md.N);
      ReferenceEpilogue ref;
      for (float sw : md.s_w) ref.scale.push_back(double(md.s_x) * double(sw));
      ref.bias.assign(md.bias.begin(), md.bias.end());
      if (out_kind != OutputKind::Float32 && !acc.empty()) {
        // y_scale maps the largest |v| to 100 and zp_y (plus jitter) centres the outputs in the
        // range, so most outputs are inside it and the farthest saturate.
        double largest = 0.0, mean = 0.0;
        for (size_t i = 0; i < acc.size(); ++i) {
          const double v = ref.value(acc[i], int64_t(i) % md.N);
          largest = std::max(largest, std::fabs(v));
          mean += v / double(acc.size());
        }
        md.s_y = std::max(float(largest / 100.0), 1e-3f);
        const QRange r = output_range(out_kind);
        const int32_t jitter = std::uniform_int_distribution<int32_t>(-10, 10)(rng);
        md.zp_y = std::clamp(int32_t(std::lround((r.lo + r.hi) / 2.0 - mean / md.s_y)) + jitter, r.lo, r.hi);
      }
      ref.y_scale = md.s_y;
      ref.y_zero_point = md.zp_y;
      const std::vector<uint8_t> got = run_data_path(md, w_is_nk);

      size_t unsaturated = 0;
      for (int64_t m = 0; m < md.M; ++m) {
        for (int64_t n = 0; n < md.N; ++n) {
          const size_t i = size_t(m * md.N + n);
          // ONNX semantics: dequantize both operands, MatMul, add bias, all in double.
          double real = 0.0, magnitude = 0.0;
          for (int64_t k = 0; k < md.K; ++k) {
            const double xv = double(md.s_x) * (md.x[size_t(m * md.K + k)] - md.zx);
            const double wv = double(md.s_w_of(n)) * (md.w[size_t(k * md.N + n)] - md.zw_of(n));
            real += xv * wv;
            magnitude += std::fabs(xv * wv);
          }
          if (!md.bias.empty()) real += md.bias[size_t(n)];

          if (out_kind == OutputKind::Float32) {
            float y;
            std::memcpy(&y, got.data() + i * sizeof(float), sizeof(float));
            const float want = ref.to_float(acc[i], n);
            ASSERT_EQ(std::bit_cast<uint32_t>(y), std::bit_cast<uint32_t>(want)) << "at [" << m << "][" << n << "]";
            ASSERT_NEAR(double(y), real, 1e-6 * std::fabs(real) + 1e-12 * magnitude + 1e-30)
                << "at [" << m << "][" << n << "]";
          } else {
            const QRange r = output_range(out_kind);
            const int32_t y = out_kind == OutputKind::Uint8 ? int32_t(got[i]) : int32_t(int8_t(got[i]));
            const int32_t want = ref.to_quantized(acc[i], n, r.lo, r.hi);
            ASSERT_EQ(y, want) << "at [" << m << "][" << n << "]";
            const double ideal = std::clamp(std::nearbyint(real / md.s_y) + md.zp_y, double(r.lo), double(r.hi));
            ASSERT_LE(std::fabs(y - ideal), 1.0) << "at [" << m << "][" << n << "]";
            unsaturated += y > r.lo && y < r.hi;
          }
        }
      }
      if (out_kind != OutputKind::Float32 && md.M * md.N > 0) {
        EXPECT_GT(unsaturated * 2, size_t(md.M * md.N)) << "most outputs should be inside the range";
      }
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [x_type, w_type, out_kind, w_is_nk] = info.param;
  const char* out = out_kind == OutputKind::Float32 ? "float32" : out_kind == OutputKind::Int8 ? "int8" : "uint8";
  return std::string("x_") + name_of(x_type) + "_w_" + name_of(w_type) + "_out_" + out + (w_is_nk ? "_nk" : "_kn");
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, DataPath,
                         ::testing::Combine(::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(QType::Int8, QType::Uint8),
                                            ::testing::Values(OutputKind::Float32, OutputKind::Int8, OutputKind::Uint8),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
}  // namespace onebit_test
