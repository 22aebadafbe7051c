// SPDX-License-Identifier: Apache-2.0
// Opening the files the EP is pointed at (designs, the routes file, the device lock, trace files)
// so that a FIFO, a device node or a directory in their place is an error, never a hang or an
// endless read: opened with O_NONBLOCK, checked to be a regular file, read up to a size bound;
// and writing the files it creates, whole or not at all. Every error names the path and the
// errno text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace onebit::npu {

// An owned file descriptor (closed by the destructor).
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

enum class FileAccess {
  kRead,             // an existing file, read only
  kReadWriteCreate,  // created if missing (the device lock)
  kWriteCreate,      // created if missing, its contents left as they are (a trace file, claimed at
                     // session creation and replaced whole at release)
};

// Opens `path` without blocking and checks it is a regular file; kIo naming the path otherwise.
Result<FileDescriptor> open_regular_file(const std::string& path, FileAccess access);

// The whole of the regular file `path`; kIo when it cannot be read or holds more than max_bytes.
Result<std::vector<uint8_t>> read_regular_file(const std::string& path, size_t max_bytes);

// The one way the EP writes a file (trace files, designs): the bytes go to a temporary file beside
// `path`, created exclusively (never an existing FIFO, device or link), synced, then renamed over
// `path`: a reader, another session or another process sees the old file or the whole new one.
// kIo naming the path, the step and the errno otherwise; nothing is left behind.
Status write_file_atomically(const std::string& path, const void* data, size_t size);

// Which file an open descriptor or a path is (device and inode), to tell whether a path still
// names the file a descriptor has open. statx, not stat: the library must load on glibc 2.28.
struct FileIdentity {
  uint64_t device = 0, inode = 0;
  bool operator==(const FileIdentity&) const = default;
};
Result<FileIdentity> identity_of(int fd);
Result<FileIdentity> identity_of(const std::string& path);

}  // namespace onebit::npu
