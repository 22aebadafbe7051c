// SPDX-License-Identifier: Apache-2.0
// The threads session runs execute on. A run waits on a libuv worker (which blocks) while one of
// these threads runs it: the lowest-numbered idle one, so a caller running one session step after
// step (a decoder) always lands on the same thread. On libuv's own pool successive runs moved
// between its four workers, and a decoder ran slower than on one fixed thread (BENCHMARKS.md).
// Concurrent runs get a thread each; threads are made on demand and live as long as the process.
#pragma once
#include <functional>

namespace onebit::node {

// Runs `job` on a run thread and returns when it has finished; rethrows what it threw.
void on_run_thread(const std::function<void()>& job);

}  // namespace onebit::node
