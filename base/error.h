// SPDX-License-Identifier: Apache-2.0
// Status-style errors of the device runtime. No function of npu/ reports a failure by throwing:
// each returns a Status or a Result<T> whose Error names what failed and why, so the caller
// (the EP) can count it and run the call on the host instead.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace onebit::npu {

enum class ErrorCode {
  kInvalidArgument,  // the caller asked for something malformed (shape, range, option)
  kUnavailable,      // no such device / backend, or the device is closed
  kBusy,             // the device lock is held by another process
  kDesign,           // a design is missing, corrupt, truncated, mismatched or failed to load
  kLaunch,           // a launch was refused or faulted on the device
  kTimeout,          // a wait ran out of time (the run was cancelled)
  kSync,             // a BO sync failed
  kIo,               // filesystem trouble (cache dir, lock file)
  kInternal,         // a bug or an exhausted resource
};

const char* error_code_name(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string reason;

  // "design: <reason>"
  std::string to_string() const;
};

class [[nodiscard]] Status {
 public:
  Status() = default;                                // ok
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit, so `return Error{...}` works

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }
  ErrorCode code() const { return error_->code; }
  const std::string& reason() const { return error_->reason; }
  std::string to_string() const { return ok() ? "ok" : error_->to_string(); }

 private:
  std::optional<Error> error_;
};

// A value or an Error (std::expected is C++23).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  // From a failed Status (an ok one is a caller bug, reported as kInternal).
  Result(Status status)  // NOLINT
      : v_(status.ok() ? Error{ErrorCode::kInternal, "ok status used as an error"} : status.error()) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status{} : Status{error()}; }

 private:
  std::variant<T, Error> v_;
};

inline Error make_error(ErrorCode code, std::string reason) { return Error{code, std::move(reason)}; }

}  // namespace onebit::npu
