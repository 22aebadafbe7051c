// SPDX-License-Identifier: Apache-2.0
#include "npu/device_lock.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace onebit::npu {

std::string default_lock_path() {
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir = runtime_dir != nullptr && runtime_dir[0] != '\0' ? runtime_dir : "/tmp";
  return dir + "/onebit-npu.lock";
}

DeviceLock::DeviceLock(std::string path) : path_(std::move(path)) {}

DeviceLock::~DeviceLock() { unlock(); }

Status DeviceLock::try_lock() {
  // A lock on a file no longer at path_ (removed, or replaced by another one) excludes nobody:
  // whoever opens path_ now locks a different file. So after each flock, and at each call while
  // held, check that path_ still names the locked file; if not, drop it and lock the new one.
  constexpr int kAttempts = 3;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (held_ && still_at_path()) return {};
    if (held_) {
      unlock();
      fd_ = FileDescriptor();
    }
    if (fd_.get() < 0) {
      Result<FileDescriptor> opened = open_regular_file(path_, FileAccess::kReadWriteCreate);
      if (!opened) return make_error(ErrorCode::kIo, "cannot open device lock: " + opened.error().reason);
      Result<FileIdentity> identity = identity_of(opened->get());
      if (!identity) return make_error(ErrorCode::kIo, "device lock " + path_ + ": " + identity.error().reason);
      fd_ = std::move(*opened);
      identity_ = *identity;
    }
    if (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) return make_error(ErrorCode::kIo, "flock " + path_ + ": " + std::strerror(err));
      if (!still_at_path()) {
        fd_ = FileDescriptor();
        continue;
      }
      return make_error(ErrorCode::kBusy, "device held by " + holder() + " (lock " + path_ + ")");
    }
    held_ = true;
    if (!still_at_path()) continue;
    // A fixed-width record, so no truncation is needed.
    char pid[16];
    const int len = std::snprintf(pid, sizeof pid, "%10ld\n", static_cast<long>(::getpid()));
    (void)!::pwrite(fd_.get(), pid, static_cast<size_t>(len), 0);
    return {};
  }
  if (held_) unlock();
  return make_error(ErrorCode::kIo, "device lock " + path_ + " was replaced or removed " + std::to_string(kAttempts) +
                                        " times while being taken");
}

bool DeviceLock::still_at_path() const {
  Result<FileIdentity> at_path = identity_of(path_);
  return at_path && *at_path == identity_;
}

// Diagnostics: the pid the holder wrote (a holder that just took it may not have yet).
std::string DeviceLock::holder() const {
  char buf[16] = {};
  if (::pread(fd_.get(), buf, sizeof buf - 1, 0) > 0) {
    const long pid = std::strtol(buf, nullptr, 10);
    if (pid > 0) return "pid " + std::to_string(pid);
  }
  return "another process";
}

void DeviceLock::unlock() {
  if (!held_) return;
  ::flock(fd_.get(), LOCK_UN);
  held_ = false;
}

}  // namespace onebit::npu
