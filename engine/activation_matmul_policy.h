// SPDX-License-Identifier: Apache-2.0
// Whether the EP claims an activation × activation group, whose B changes per call (attention's
// QKᵀ and PV when a quantizer quantizes them). Such a call packs B (K·N per batch entry), then
// runs the exact kernel and epilogue; the packing pays off over M rows, the epilogue (once per
// output) over K. Measured against ORT's CPU EP on the same models (bench/bench_dynamic.py
// attention; MiniLM's and SmolLM2's attention shapes, S 32-1024, N 32-256, 1 thread, AVX-512
// VNNI; BENCHMARKS.md): QKᵀ (K = D = 32 or 64) was slower at every S (0.31-0.84x); PV (M = K = S)
// was slower up to S = 384 (0.32-1.02x) and faster from S = 512 on (0.97-1.18x at 512,
// 1.20-1.51x at 768 and 1024). So the measured rule claims a group only where its declared
// shape has M >= 512 and K >= 512; a symbolic M or K (the usual dynamic sequence length) is
// declined, as nothing says the call will be large.
#pragma once
#include <cstdint>
#include <string>

namespace onebit {

enum class ActivationMatmuls {
  Measured,  // the measured rule: M >= kActivationMatmulMinRows and K >= kActivationMatmulMinK
  All,       // every one that can run exactly (benchmarks, and tests of the path)
};

constexpr int64_t kActivationMatmulMinRows = 512;
constexpr int64_t kActivationMatmulMinK = 512;

// From the environment: ONEBIT_ACTIVATION_MATMULS unset, "" or "measured" -> Measured, "all" ->
// All; anything else throws std::invalid_argument naming the variable and its values.
ActivationMatmuls activation_matmuls_from_env();

// Why a group whose B changes per call, with M rows and inner dimension K as the model declares
// them (-1: symbolic), is not claimed under `rule`; "" when it is claimed.
std::string activation_matmul_decline(ActivationMatmuls rule, int64_t M, int64_t K);

}  // namespace onebit
