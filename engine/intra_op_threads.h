// SPDX-License-Identifier: Apache-2.0
// What the EP reads of ORT's own intra-op thread options: whether the threads sleep between calls,
// so that a split call first waits for one to wake (CallResources::threads_sleep); and which calls
// are worth that wait.
#pragma once
#include <map>
#include <string>

namespace onebit {

// Whether the session's intra-op threads sleep between calls, read from the session's config
// entries as ORT reads them: allow_spinning set to anything but "1", or a spin_duration_us under
// 100 µs (threads that spin a few µs are asleep again when the next call comes; ORT's default
// spins for ms). Unset, they spin, the default of ORT's packages (client builds of ORT default to
// sleeping, which an EP cannot see). A session on the environment's global pools: ORT ignores
// these entries and follows the environment's setting, which an EP cannot read; the EP goes by
// the entries all the same.
bool intra_op_threads_sleep(const std::map<std::string, std::string>& config);

// Threads that sleep between calls take 10–20 µs to wake for a split call, and two threads stream
// memory little faster than one: so a call splits over them only when one thread is estimated to
// take at least this long. 2 threads, Xeon, a MatMulNBits call (BENCHMARKS.md): 576x576 at 1 row
// 18 µs on one thread against 28 split, 576x192 at 32 rows 53 against 70; 1024x3072 at 1 row 118
// split against 158 or more.
constexpr double kSplitWorthNsWhenThreadsSleep = 100'000;

// Whether a call estimated at one_thread_ns on one thread is split over the session's threads:
// always over spinning threads, over sleeping ones from kSplitWorthNsWhenThreadsSleep.
inline bool split_over_threads(double one_thread_ns, bool threads_sleep) {
  return !threads_sleep || one_thread_ns >= kSplitWorthNsWhenThreadsSleep;
}

}  // namespace onebit
