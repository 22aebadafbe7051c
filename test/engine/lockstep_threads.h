// SPDX-License-Identifier: Apache-2.0
// Threads that meet between the steps of every round: for tests of what concurrent holders share.
#pragma once
#include <barrier>
#include <thread>
#include <vector>

namespace onebit {

// `threads` threads run `rounds` rounds each. In a round every thread calls acquire(t, round), all
// wait (so every thread's holding is in place), every thread calls check(t, round), all wait,
// every thread calls release(t), all wait. acquire and check return their failures; the result
// is each thread's total.
template <class Acquire, class Check, class Release>
std::vector<int> run_in_lockstep(int threads, int rounds, Acquire acquire, Check check, Release release) {
  std::barrier sync(threads);
  std::vector<int> failures(static_cast<size_t>(threads), 0);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back([&, t] {
      for (int round = 0; round < rounds; ++round) {
        failures[t] += acquire(t, round);
        sync.arrive_and_wait();
        failures[t] += check(t, round);
        sync.arrive_and_wait();
        release(t);
        sync.arrive_and_wait();
      }
    });
  for (auto& thread : running) thread.join();
  return failures;
}

}  // namespace onebit
