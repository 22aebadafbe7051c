// SPDX-License-Identifier: Apache-2.0
#include "kernels/epilogue.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu_features.h"

namespace onebit {

namespace {

struct Columns {
  int64_t M, N, begin, end;
};

// The epilogue's arithmetic, written once over its float type F (double, or float for
// float32_steps). It is compiled three times (below): for the baseline ISA, for AVX2 and for
// AVX-512, where GCC vectorises it (vcvtdq2pd, vmulpd, vdivpd, vroundpd or vrndscalepd, or their
// float forms) — same operations, same order, so the same results.
// The scale and bias arrays of arithmetic F: scale and bias, or scale32 and bias32.
template <typename F>
struct Factors {
  const F* scale;
  const F* bias;  // null: none
  bool per_column;
  explicit Factors(const Epilogue& e) {
    const auto& s = pick(e.scale, e.scale32);
    const auto& b = pick(e.bias, e.bias32);
    scale = s.data();
    bias = b.empty() ? nullptr : b.data();
    per_column = s.size() > 1;
  }
  static const std::vector<F>& pick(const std::vector<double>& d, const std::vector<float>& f) {
    if constexpr (std::is_same_v<F, float>)
      return f;
    else
      return d;
  }
};

// kByReciprocal: y_scale is a power of two (QLinearMatMul folds its scales into `scale` and
// leaves y_scale 1), so v * (1 / y_scale) is the same correctly rounded number as v / y_scale,
// and the loop skips the division, its slowest instruction.
template <typename F, typename T, bool kByReciprocal>
[[gnu::always_inline]] inline void requantize(const Epilogue& e, const int32_t* acc, Columns c, T* out) {
  constexpr F lo = F(std::numeric_limits<T>::min());
  constexpr F hi = F(std::numeric_limits<T>::max());
  const Factors<F> f(e);
  const F* scale = f.scale;
  const F* bias = f.bias;
  const bool per_column = f.per_column;
  const F y_scale = F(e.y_scale);
  const F y_reciprocal = F(1) / y_scale;
  const F y_zero_point = F(e.y_zero_point);
  for (int64_t m = 0; m < c.M; ++m) {
    const int32_t* a = acc + m * c.N;
    T* y = out + m * c.N;
    for (int64_t n = c.begin; n < c.end; ++n) {
      F v = F(a[n]) * scale[per_column ? n : 0];
      if (bias) v += bias[n];
      // nearbyint rounds half to even in the default rounding mode, as ONNX requires.
      F q = std::nearbyint(kByReciprocal ? v * y_reciprocal : v / y_scale) + y_zero_point;
      // Written so NaN (a NaN bias, or +Inf + -Inf) fails the first test and becomes lo: ORT's
      // QuantizeLinear gives the type's minimum for NaN, and casting NaN to an integer is UB.
      q = q >= lo ? q : lo;
      q = q > hi ? hi : q;
      y[n] = static_cast<T>(q);
    }
  }
}

// A finite power of two with a finite reciprocal, which is then exact (2^k's frexp mantissa is
// exactly 0.5).
template <typename F>
bool is_power_of_two(F v) {
  int exponent = 0;
  return std::isfinite(v) && std::frexp(v, &exponent) == F(0.5) && std::isfinite(F(1) / v);
}

template <typename F, typename T>
[[gnu::always_inline]] inline void requantize_to(const Epilogue& e, const int32_t* acc, Columns c, T* out) {
  if (is_power_of_two(F(e.y_scale)))
    requantize<F, T, true>(e, acc, c, out);
  else
    requantize<F, T, false>(e, acc, c, out);
}

template <typename F>
[[gnu::always_inline]] inline void dequantize(const Epilogue& e, const int32_t* acc, Columns c, float* out) {
  const Factors<F> f(e);
  const F* scale = f.scale;
  const F* bias = f.bias;
  const bool per_column = f.per_column;
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t n = c.begin; n < c.end; ++n) {
      F v = F(acc[m * c.N + n]) * scale[per_column ? n : 0];
      if (bias) v += bias[n];
      out[m * c.N + n] = static_cast<float>(v);
    }
  }
}

// Float and quantized outputs (Int32 is a plain copy, handled by the caller).
template <typename F>
[[gnu::always_inline]] inline void apply_in(const Epilogue& e, const int32_t* acc, Columns c, void* out) {
  switch (e.kind) {
    case OutputKind::Float32:
      dequantize<F>(e, acc, c, static_cast<float*>(out));
      break;
    case OutputKind::Int8:
      requantize_to<F>(e, acc, c, static_cast<int8_t*>(out));
      break;
    case OutputKind::Uint8:
      requantize_to<F>(e, acc, c, static_cast<uint8_t*>(out));
      break;
    case OutputKind::Int32:
      break;
  }
}

[[gnu::always_inline]] inline void apply_converting(const Epilogue& e, const int32_t* acc, Columns c, void* out) {
  if (e.float32_steps)
    apply_in<float>(e, acc, c, out);
  else
    apply_in<double>(e, acc, c, out);
}

void apply_baseline(const Epilogue& e, const int32_t* acc, Columns c, void* out) { apply_converting(e, acc, c, out); }

__attribute__((target("avx2"))) void apply_avx2(const Epilogue& e, const int32_t* acc, Columns c, void* out) {
  apply_converting(e, acc, c, out);
}

// zmm: fewer instructions per element, so a faster epilogue where the CPU has AVX-512.
__attribute__((target("avx2,avx512f,avx512vl,avx512bw"))) void apply_avx512(const Epilogue& e, const int32_t* acc,
                                                                            Columns c, void* out) {
  apply_converting(e, acc, c, out);
}

}  // namespace

void Epilogue::take_float32_steps() {
  float32_steps = true;
  scale32.assign(scale.begin(), scale.end());
  bias32.assign(bias.begin(), bias.end());
  scale.clear();
  bias.clear();
}

bool Epilogue::fused_float_output(void* y, FusedFloatOutput& fused) const {
  if (kind != OutputKind::Float32 || !float32_steps) return false;
  fused = {static_cast<float*>(y), scale32.data(), scale32.size() > 1, bias32.empty() ? nullptr : bias32.data()};
  return true;
}

size_t output_element_size(OutputKind kind) {
  switch (kind) {
    case OutputKind::Float32:
    case OutputKind::Int32:
      return 4;
    case OutputKind::Int8:
    case OutputKind::Uint8:
      return 1;
  }
  return 0;
}

void Epilogue::apply_columns(const int32_t* acc, int64_t M, int64_t N, int64_t n_begin, int64_t n_end,
                             void* out) const {
  const Columns c{M, N, n_begin, n_end};
  if (kind == OutputKind::Int32) {
    for (int64_t m = 0; m < M; ++m)
      std::copy(acc + m * N + n_begin, acc + m * N + n_end, static_cast<int32_t*>(out) + m * N + n_begin);
    return;
  }
  static const auto apply = cpu_features().avx512 ? apply_avx512 : cpu_features().avx2 ? apply_avx2 : apply_baseline;
  apply(*this, acc, c, out);
}

}  // namespace onebit
