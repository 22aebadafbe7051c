// SPDX-License-Identifier: Apache-2.0
// Whether the EP claims an activation × activation group, whose B changes per call (attention's
// QKᵀ and PV when a quantizer quantizes them). Such a call packs B (K·N per batch entry), then
// runs the exact kernel and epilogue; the packing pays off over M rows, the epilogue (once per
// output) over K. Against ORT's CPU EP on the same models (bench/bench_dynamic.py attention;
// BENCHMARKS.md) QKᵀ was slower at every sequence length, and PV faster only from S = 512 with
// N = D of 32 or 64. So the measured rule claims a group only where its declared shape has
// M >= 512, K >= 512 and N <= 64; a symbolic dim (the usual dynamic sequence length) is declined,
// as nothing says the call will be in that range.
// Exactness comes before speed: where ORT's own kernel for the group may be wrong (an int8 B on a
// CPU without VNNI, whose vpmaddubsw saturates 16-bit pair sums), the group is claimed whatever its
// shape, as long as its K is declared and within the exact int32 bound (a call past it could only
// fail). ORT's quantizers give attention uint8 x uint8, which ORT computes exactly there. The
// price is speed: B is packed at every call, far slower than ORT at decode shapes (BENCHMARKS.md).
#pragma once
#include <cstdint>
#include <string>

#include "kernels/quant_types.h"

namespace onebit {

enum class ActivationMatmuls {
  Measured,  // the measured rule: M >= kActivationMatmulMinRows, K >= kActivationMatmulMinK, N <= kActivationMatmulMaxN
  All,       // every one that can run exactly (benchmarks, and tests of the path)
};

constexpr int64_t kActivationMatmulMinRows = 512;
constexpr int64_t kActivationMatmulMinK = 512;
constexpr int64_t kActivationMatmulMaxN = 64;

// From the environment: ONEBIT_ACTIVATION_MATMULS unset, "" or "measured" -> Measured, "all" ->
// All; anything else throws std::invalid_argument naming the variable and its values.
ActivationMatmuls activation_matmuls_from_env();

// Whether ORT's CPU EP may get an activation x activation int8 MatMul with a B of this type wrong
// on a CPU with these VNNI flags: an int8 B without VNNI, whatever A is. ORT's AVX2 kernel
// saturates uint8 x int8 (measured against int64 arithmetic in test_activation_matmul.py), and its
// QDQS8ToU8 rewrite turns an int8 activation into uint8 on those CPUs, so int8 x int8 QDQ reaches
// it too.
bool ort_saturates(QType b, bool cpu_has_vnni);
// The same on this CPU.
bool ort_saturates_here(QType b);

// Why a group whose B changes per call, with M rows, inner dimension K and N columns as the model
// declares them (-1: symbolic), is not claimed under `rule`; "" when it is claimed. A group ORT
// may compute wrongly (`ort_saturates`) is claimed when its K is declared and at most kMaxK.
std::string activation_matmul_decline(ActivationMatmuls rule, int64_t M, int64_t K, int64_t N, bool ort_saturates);

}  // namespace onebit
