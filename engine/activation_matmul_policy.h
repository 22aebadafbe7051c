// SPDX-License-Identifier: Apache-2.0
// Whether the EP claims activation × activation groups, whose B changes per call (attention's QKᵀ
// and PV when a quantizer quantizes them). Such a call packs B, then runs the exact kernel and
// epilogue. Measured against ORT's CPU EP on the same models (bench/bench_dynamic.py attention;
// MiniLM's and SmolLM2's attention shapes, S 32-512, 1 thread, AVX-512 VNNI; BENCHMARKS.md), it
// was slower at every shape: 0.23-0.68x for QKᵀ (K = D = 32 or 64: neither the packing of B nor
// the epilogue, once per output, is amortised over K) and 0.35-0.99x for PV (K = S), nearing
// parity only at S = 512. So the measured rule claims none of them.
#pragma once
#include <string>

namespace onebit {

enum class ActivationMatmuls {
  Measured,  // the measured rule: none
  All,       // every one that can run exactly (benchmarks, and tests of the path)
};

// From the environment: ONEBIT_ACTIVATION_MATMULS unset, "" or "measured" -> Measured, "all" ->
// All; anything else throws std::invalid_argument naming the variable and its values.
ActivationMatmuls activation_matmuls_from_env();

// Why a group whose B changes per call is not claimed under `rule`; "" when it is claimed.
std::string activation_matmul_decline(ActivationMatmuls rule);

}  // namespace onebit
