// SPDX-License-Identifier: Apache-2.0
// A design's behaviour, checked once before use: the loader checks structure and checksum, but a
// well-formed program can still compute something else (its checksum recomputed). So each loaded
// design runs once on a seeded input, A (m_block × K) and W (K × N) over the full int8 range,
// and its C must equal a plain int64 reference exactly; otherwise it is rejected (kDesign) and the
// caller never uses it. A design that passed is remembered for the process (by key and program
// checksum), so a model with many groups of one shape checks it once.
#pragma once
#include <chrono>
#include <vector>

#include "base/error.h"
#include "npu/design.h"
#include "npu/device.h"

namespace onebit::npu {

// `designs[i]` loaded as `loaded[i]`; all of one (K, N) and tiling.
Status check_designs_compute(Device& device, const std::vector<Design>& designs,
                             const std::vector<std::shared_ptr<LoadedDesign>>& loaded,
                             std::chrono::milliseconds timeout);

}  // namespace onebit::npu
