// SPDX-License-Identifier: Apache-2.0
// Whether the EP claims activation × activation groups, whose B changes per call (attention's QKᵀ
// and PV when a quantizer quantizes them). Such a call packs B, then runs the exact kernel and
// epilogue. Measured against ORT's CPU EP on the same models (bench/bench_dynamic.py attention;
// MiniLM's and SmolLM2's attention shapes, S 32-512, 1 thread, AVX-512 VNNI; BENCHMARKS.md), no
// shape was reliably faster: 0.24-0.78x for QKᵀ (K = D = 32 or 64: neither the packing of B nor
// the epilogue, once per output, is amortised over K), 0.30-0.62x for PV (K = S) up to S = 128 and
// level at S = 512 (0.88-1.07x, within the run-to-run spread; and S is symbolic when the session
// is created). So the measured rule claims none of them.
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
