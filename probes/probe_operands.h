// SPDX-License-Identifier: Apache-2.0
// The probe's operands: seeded random int8 activations and weights, and a typical A8W8 epilogue
// (per-channel weight scales, a float bias, int8 output) so both routes pay the real epilogue.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/epilogue.h"

namespace onebit::probes {

struct ProbeOperands {
  uint32_t K = 0, N = 0, max_rows = 0;
  std::vector<int8_t> a;  // max_rows × K, row-major; a call of M rows reads the first M rows
  std::vector<int8_t> w;  // K × N, row-major
  Epilogue epilogue;      // int8 output, zero points 0
};

ProbeOperands make_operands(uint32_t K, uint32_t N, uint32_t max_rows, uint32_t seed);

}  // namespace onebit::probes
