// SPDX-License-Identifier: Apache-2.0
#include "npu/device_lock.h"

#include <fcntl.h>
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

DeviceLock::~DeviceLock() {
  unlock();
  if (fd_ >= 0) ::close(fd_);
}

Status DeviceLock::try_lock() {
  if (held_) return {};
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) return make_error(ErrorCode::kIo, "cannot open device lock " + path_ + ": " + std::strerror(errno));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return make_error(ErrorCode::kIo, "flock " + path_ + ": " + std::strerror(err));
    // Diagnostics: the pid the holder wrote (a holder that just took it may not have yet).
    char buf[16] = {};
    std::string holder = "another process";
    if (::pread(fd_, buf, sizeof buf - 1, 0) > 0) {
      const long pid = std::strtol(buf, nullptr, 10);
      if (pid > 0) holder = "pid " + std::to_string(pid);
    }
    return make_error(ErrorCode::kBusy, "device held by " + holder + " (lock " + path_ + ")");
  }
  // A fixed-width record, so no truncation is needed.
  char pid[16];
  const int len = std::snprintf(pid, sizeof pid, "%10ld\n", static_cast<long>(::getpid()));
  (void)!::pwrite(fd_, pid, static_cast<size_t>(len), 0);
  held_ = true;
  return {};
}

void DeviceLock::unlock() {
  if (!held_) return;
  ::flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace onebit::npu
