// SPDX-License-Identifier: Apache-2.0
#include "probes/host_path.h"

#include <chrono>

namespace onebit::probes {

HostPath::HostPath(const ProbeOperands& ops)
    : ops_(ops), packed_(pack_weights(ops.w.data(), QType::Int8, ops.K, ops.N, false, nullptr, 0)) {
  acc_.resize(size_t(ops.max_rows) * ops.N);
  out_.resize(size_t(ops.max_rows) * ops.N);
}

double HostPath::call(uint32_t rows) {
  using Clock = std::chrono::steady_clock;
  Activation x;
  x.data = ops_.a.data();
  x.type = QType::Int8;
  x.zero_point = 0;
  x.M = rows;
  const auto start = Clock::now();
  prepared_ = prepare_activation(x, ops_.K);
  gemm_q8_blocks(prepared_, packed_, 0, packed_.n_blocks(), acc_.data(), ops_.N);
  ops_.epilogue.apply(acc_.data(), rows, ops_.N, out_.data());
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace onebit::probes
