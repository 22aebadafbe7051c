// SPDX-License-Identifier: Apache-2.0
// Per-call times summarised as a median with its min–max spread.
#pragma once
#include <vector>

namespace onebit::probes {

struct Spread {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
};

// Median (mean of the two middle values for an even count), min and max; all 0 when empty.
Spread spread_of(std::vector<double> samples_ms);

}  // namespace onebit::probes
