// SPDX-License-Identifier: Apache-2.0
// The cross-process device lock: flock(LOCK_EX | LOCK_NB) on a file in the runtime directory.
// try_lock never blocks; the kernel releases the lock when the holder's file description
// closes, so a crashed or killed holder releases it. The holder writes its pid into the file
// so a busy result can name it. The file stays open between calls, so a per-call
// try_lock / unlock pair costs two flock calls and one small pwrite.
//
// The lock file must be a regular file. If it is removed or replaced while held, the holder
// notices at its next try_lock (each call, under either lease policy) and takes the lock on the
// file now at the path, or finds it busy.
//
// flock belongs to the open file description: two DeviceLock objects in one process contend
// like two processes do; a child forked while the lock is held shares it until it exits or
// execs (the descriptor is close-on-exec).
#pragma once
#include <string>

#include "base/error.h"
#include "base/regular_file.h"

namespace onebit::npu {

// $XDG_RUNTIME_DIR/onebit-npu.lock, or /tmp/onebit-npu.lock without XDG_RUNTIME_DIR.
std::string default_lock_path();

class DeviceLock {
 public:
  explicit DeviceLock(std::string path = default_lock_path());
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  // Ok when acquired (or already held by this object); kBusy naming the holder's pid when
  // another holds it; kIo when the lock file cannot be opened.
  Status try_lock();
  void unlock();
  bool held() const { return held_; }
  const std::string& path() const { return path_; }

 private:
  bool still_at_path() const;
  std::string holder() const;

  std::string path_;
  FileDescriptor fd_;      // opened at the first try_lock
  FileIdentity identity_;  // of the file fd_ has open
  bool held_ = false;
};

}  // namespace onebit::npu
