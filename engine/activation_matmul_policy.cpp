// SPDX-License-Identifier: Apache-2.0
#include "engine/activation_matmul_policy.h"

#include <cstdlib>
#include <stdexcept>

#include "kernels/cpu_features.h"
#include "kernels/gemm_q8.h"

namespace onebit {

ActivationMatmuls activation_matmuls_from_env() {
  const char* env = std::getenv("ONEBIT_ACTIVATION_MATMULS");
  const std::string value = env == nullptr ? "" : env;
  if (value.empty() || value == "measured") return ActivationMatmuls::Measured;
  if (value == "all") return ActivationMatmuls::All;
  throw std::invalid_argument("onebit: ONEBIT_ACTIVATION_MATMULS=" + value + " is invalid: use 'measured' or 'all'");
}

bool ort_saturates(QType b, bool cpu_has_vnni) { return b == QType::Int8 && !cpu_has_vnni; }

bool ort_saturates_here(QType b) { return ort_saturates(b, cpu_features().avx512_vnni || cpu_features().avx_vnni); }

std::string activation_matmul_decline(ActivationMatmuls rule, int64_t M, int64_t K, int64_t N, bool ort_saturates) {
  const bool measured_faster =
      M >= kActivationMatmulMinRows && K >= kActivationMatmulMinK && N >= 0 && N <= kActivationMatmulMaxN;
  const bool exact_where_ort_is_not = ort_saturates && K >= 0 && K <= kMaxK;
  if (rule == ActivationMatmuls::All || measured_faster || exact_where_ort_is_not) return "";
  return "an activation x activation group with M=" + std::to_string(M) + " K=" + std::to_string(K) +
         " N=" + std::to_string(N) +
         " (-1: symbolic) is claimed only with M >= " + std::to_string(kActivationMatmulMinRows) +
         ", K >= " + std::to_string(kActivationMatmulMinK) + " and N <= " + std::to_string(kActivationMatmulMaxN) +
         ", where packing B per call was measured faster than ORT's CPU EP (BENCHMARKS.md)" +
         (ort_saturates
              ? "; ORT's kernel may saturate on this CPU, but the EP claims such a group only with K declared "
                "and at most " +
                    std::to_string(kMaxK)
              : "") +
         "; ONEBIT_ACTIVATION_MATMULS=all claims it";
}

}  // namespace onebit
