// SPDX-License-Identifier: Apache-2.0
// Failure injection, for tests only: makes the device fail at one point so the caller's
// fallback can be exercised. Process-wide. Env ONEBIT_NPU_FAIL=design|launch|timeout (read
// once, at the first query) or set_injected_failure(), which overrides the env.
//   design   load_design fails (kDesign)
//   launch   launch fails (kLaunch)
//   timeout  a launched run stalls on the device until cancelled, so wait() times out (kTimeout)
#pragma once
#include <optional>
#include <string_view>

namespace onebit::npu {

enum class InjectedFailure { kNone, kDesign, kLaunch, kTimeout };

std::optional<InjectedFailure> injected_failure_from_name(std::string_view name);  // "", "none", "design", ...
const char* injected_failure_name(InjectedFailure failure);

InjectedFailure injected_failure();
void set_injected_failure(InjectedFailure failure);

}  // namespace onebit::npu
