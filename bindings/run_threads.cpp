// SPDX-License-Identifier: Apache-2.0
#include "run_threads.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace onebit::node {

namespace {

// One thread and the job it is running (null when idle).
struct RunThread {
  std::mutex mutex;
  std::condition_variable changed;
  const std::function<void()>* job = nullptr;
  std::exception_ptr error;
  bool done = false;

  RunThread() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [this] { return job != nullptr && !done; });
      lock.unlock();
      std::exception_ptr thrown;
      try {
        (*job)();
      } catch (...) {
        thrown = std::current_exception();
      }
      lock.lock();
      error = thrown;
      done = true;
      changed.notify_all();
    }
  }

  void run(const std::function<void()>& work) {
    std::unique_lock<std::mutex> lock(mutex);
    job = &work;
    done = false;
    changed.notify_all();
    changed.wait(lock, [this] { return done; });
    job = nullptr;
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
  }
};

std::mutex pool_mutex;
// Never freed: the detached threads use them until the process ends.
auto* threads = new std::vector<std::unique_ptr<RunThread>>();
auto* busy = new std::vector<bool>();

// The lowest-numbered idle thread, marked busy; a new one if all are.
size_t claim_thread() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  for (size_t i = 0; i < busy->size(); ++i)
    if (!(*busy)[i]) return (*busy)[i] = true, i;
  threads->push_back(std::make_unique<RunThread>());
  busy->push_back(true);
  return busy->size() - 1;
}

}  // namespace

void on_run_thread(const std::function<void()>& job) {
  const size_t i = claim_thread();
  RunThread* thread = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    thread = (*threads)[i].get();
  }
  std::exception_ptr error;
  try {
    thread->run(job);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    (*busy)[i] = false;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace onebit::node
