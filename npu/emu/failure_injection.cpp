// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/failure_injection.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace onebit::npu {

namespace {

constexpr int kUnread = -1;
std::atomic<int> g_failure{kUnread};

}  // namespace

std::optional<InjectedFailure> injected_failure_from_name(std::string_view name) {
  if (name.empty() || name == "none" || name == "0") return InjectedFailure::kNone;
  if (name == "design") return InjectedFailure::kDesign;
  if (name == "launch") return InjectedFailure::kLaunch;
  if (name == "timeout") return InjectedFailure::kTimeout;
  return std::nullopt;
}

const char* injected_failure_name(InjectedFailure failure) {
  switch (failure) {
    case InjectedFailure::kNone:
      return "none";
    case InjectedFailure::kDesign:
      return "design";
    case InjectedFailure::kLaunch:
      return "launch";
    case InjectedFailure::kTimeout:
      return "timeout";
  }
  return "none";
}

InjectedFailure injected_failure() {
  int value = g_failure.load(std::memory_order_acquire);
  if (value == kUnread) {
    const char* env = std::getenv("ONEBIT_NPU_FAIL");
    std::optional<InjectedFailure> parsed = injected_failure_from_name(env != nullptr ? env : "");
    if (!parsed) {
      std::fprintf(stderr, "onebit-npu: ignoring ONEBIT_NPU_FAIL=%s (expected design, launch or timeout)\n", env);
      parsed = InjectedFailure::kNone;
    }
    int expected = kUnread;
    g_failure.compare_exchange_strong(expected, static_cast<int>(*parsed), std::memory_order_acq_rel);
    value = g_failure.load(std::memory_order_acquire);
  }
  return static_cast<InjectedFailure>(value);
}

void set_injected_failure(InjectedFailure failure) {
  g_failure.store(static_cast<int>(failure), std::memory_order_release);
}

}  // namespace onebit::npu
