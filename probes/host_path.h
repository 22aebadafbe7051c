// SPDX-License-Identifier: Apache-2.0
// The host route of one call, as the EP runs it on one thread: prepare the activation, gemm_q8
// over every column block, the shared epilogue. Weights are packed once, outside any timing.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/gemm_q8.h"
#include "probes/probe_operands.h"

namespace onebit::probes {

class HostPath {
 public:
  explicit HostPath(const ProbeOperands& ops);

  // One call over the first `rows` rows of A; returns its wall time in ms. acc() and output()
  // then hold that call's accumulators (rows × N int32) and int8 outputs.
  double call(uint32_t rows);

  const std::vector<int32_t>& acc() const { return acc_; }
  const std::vector<int8_t>& output() const { return out_; }
  const PreparedActivation& activation() const { return prepared_; }
  const PackedWeights& weights() const { return packed_; }

 private:
  const ProbeOperands& ops_;
  PackedWeights packed_;
  PreparedActivation prepared_;
  std::vector<int32_t> acc_;
  std::vector<int8_t> out_;
};

}  // namespace onebit::probes
