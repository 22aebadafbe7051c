// SPDX-License-Identifier: Apache-2.0
#include "probes/probe_operands.h"

#include <random>

namespace onebit::probes {

ProbeOperands make_operands(uint32_t K, uint32_t N, uint32_t max_rows, uint32_t seed) {
  ProbeOperands ops;
  ops.K = K;
  ops.N = N;
  ops.max_rows = max_rows;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(-128, 127);
  ops.a.resize(size_t(max_rows) * K);
  for (int8_t& v : ops.a) v = static_cast<int8_t>(byte(rng));
  ops.w.resize(size_t(K) * N);
  for (int8_t& v : ops.w) v = static_cast<int8_t>(byte(rng));

  // s_x = 0.02, s_w[n] in [0.0025, 0.005), bias in [-1, 1), s_y = 0.05: outputs use the int8 range.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ops.epilogue.kind = OutputKind::Int8;
  ops.epilogue.scale.resize(N);
  ops.epilogue.bias.resize(N);
  for (uint32_t n = 0; n < N; ++n) {
    ops.epilogue.scale[n] = double(0.02f) * double(float((0.5 + unit(rng) / 2) / 200));
    ops.epilogue.bias[n] = double(float(unit(rng) * 2 - 1));
  }
  ops.epilogue.y_scale = double(0.05f);
  ops.epilogue.y_zero_point = 0;
  return ops;
}

}  // namespace onebit::probes
