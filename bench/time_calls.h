// SPDX-License-Identifier: Apache-2.0
// Per-call timing shared by the kernel benchmarks: one warm-up call, then `repeat` timed calls;
// their median, min and max in ms.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace onebit_bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Stats {
  double median, min, max;
};

template <typename Fn>
Stats time_calls(Fn&& fn, int repeat) {
  fn();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    fn();
    ms.push_back(seconds_since(t0) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

}  // namespace onebit_bench
