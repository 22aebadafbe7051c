// SPDX-License-Identifier: Apache-2.0
#include "probes/probe_options.h"

#include <algorithm>

#include "kernels/gemm_q8.h"
#include "npu/design.h"
#include "npu/device_select.h"

namespace onebit::probes {

uint32_t max_probe_k() { return static_cast<uint32_t>(std::min<int64_t>(onebit::kMaxK, npu::kMaxK)); }

void validate(const ProbeOptions& o) {
  // Both routes must hold the shape: the host's int32 bound on K and the device's limits.
  const uint32_t max_k = max_probe_k();
  if (o.K == 0 || o.K > max_k)
    throw ProbeOptionError("K=" + std::to_string(o.K) + " is out of range: use 1.." + std::to_string(max_k));
  if (o.N == 0 || o.N > npu::kMaxN)
    throw ProbeOptionError("N=" + std::to_string(o.N) + " is out of range: use 1.." + std::to_string(npu::kMaxN));
  if (o.rows.empty()) throw ProbeOptionError("no rows values: give at least one, e.g. 1,4,32,36");
  for (uint32_t r : o.rows)
    if (r == 0 || r > kMaxProbeRows)
      throw ProbeOptionError("rows=" + std::to_string(r) + " is out of range: use 1.." + std::to_string(kMaxProbeRows));
  if (o.repeat == 0 || o.repeat > kMaxProbeRepeat)
    throw ProbeOptionError("repeat=" + std::to_string(o.repeat) + " is out of range: use 1.." +
                           std::to_string(kMaxProbeRepeat));
  if (!npu::is_device_option(o.device))
    throw ProbeOptionError("device='" + o.device + "' is invalid: use " + npu::kDeviceOptionsText);
}

}  // namespace onebit::probes
