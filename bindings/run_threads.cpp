// SPDX-License-Identifier: Apache-2.0
#include "run_threads.h"

#include <algorithm>
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
  bool claimed = false;  // guarded by pool_mutex
  std::mutex mutex;
  std::condition_variable changed;
  const std::function<void()>* job = nullptr;
  std::exception_ptr error;
  bool done = false;

  RunThread() {
    std::thread([this] { loop(); }).detach();
  }

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
auto* threads = new std::vector<std::unique_ptr<RunThread>>();  // never freed: the detached threads use them

// The lowest-numbered unclaimed thread, claimed; a new one if all are. Released when it goes.
struct ClaimedThread {
  RunThread* thread;
  ClaimedThread() {
    std::lock_guard<std::mutex> lock(pool_mutex);
    auto idle = std::find_if(threads->begin(), threads->end(), [](const auto& t) { return !t->claimed; });
    thread = idle != threads->end() ? idle->get() : threads->emplace_back(std::make_unique<RunThread>()).get();
    thread->claimed = true;
  }
  ClaimedThread(const ClaimedThread&) = delete;
  ~ClaimedThread() {
    std::lock_guard<std::mutex> lock(pool_mutex);
    thread->claimed = false;
  }
};

}  // namespace

void on_run_thread(const std::function<void()>& job) {
  const ClaimedThread claimed;
  claimed.thread->run(job);
}

}  // namespace onebit::node
