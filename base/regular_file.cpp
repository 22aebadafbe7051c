// SPDX-License-Identifier: Apache-2.0
#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace onebit::npu {

namespace {

Error io_error(const std::string& path, const std::string& what, int err) {
  return make_error(ErrorCode::kIo,
                    path + ": " + what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}

const char* kind_of(uint16_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    default:
      return "not a regular file";
  }
}

Result<struct statx> stat_of(int dirfd, const char* path, int flags, const std::string& name) {
  struct statx info{};
  if (::statx(dirfd, path, flags, STATX_TYPE | STATX_INO | STATX_SIZE, &info) != 0)
    return io_error(name, "cannot stat", errno);
  return info;
}

}  // namespace

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Result<FileDescriptor> open_regular_file(const std::string& path, FileAccess access) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer (for writing, with
  // no reader, it fails with ENXIO). It has no effect on regular files.
  int flags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  switch (access) {
    case FileAccess::kRead:
      flags |= O_RDONLY;
      break;
    case FileAccess::kReadWriteCreate:
      flags |= O_RDWR | O_CREAT;
      break;
    case FileAccess::kWriteCreate:
      flags |= O_WRONLY | O_CREAT;
      break;
  }
  FileDescriptor fd(::open(path.c_str(), flags, 0666));
  if (fd.get() < 0) return io_error(path, "cannot open", errno);
  Result<struct statx> info = stat_of(fd.get(), "", AT_EMPTY_PATH, path);
  if (!info) return info.error();
  if (!S_ISREG(info->stx_mode))
    return make_error(ErrorCode::kIo, path + ": " + kind_of(info->stx_mode) + ", expected a regular file");
  return fd;
}

Result<std::vector<uint8_t>> read_regular_file(const std::string& path, size_t max_bytes) {
  Result<FileDescriptor> fd = open_regular_file(path, FileAccess::kRead);
  if (!fd) return fd.error();
  const auto too_large = [&] {
    return make_error(ErrorCode::kIo,
                      path + ": larger than " + std::to_string(max_bytes) + " bytes, the most expected");
  };
  Result<struct statx> info = stat_of(fd->get(), "", AT_EMPTY_PATH, path);
  if (!info) return info.error();
  if (info->stx_size > max_bytes) return too_large();
  // Read to the end rather than trusting the size: the file may grow meanwhile.
  std::vector<uint8_t> bytes(static_cast<size_t>(info->stx_size) + 1);
  size_t used = 0;
  for (;;) {
    if (used == bytes.size()) {
      if (bytes.size() > max_bytes) return too_large();
      bytes.resize(std::min(bytes.size() * 2, max_bytes + 1));
    }
    const ssize_t n = ::read(fd->get(), bytes.data() + used, bytes.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path, "cannot read", errno);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes) return too_large();
  bytes.resize(used);
  return bytes;
}

Status write_file_atomically(const std::string& path, const void* data, size_t size) {
  static std::atomic<uint64_t> writes{0};
  const std::string temp = path + ".partial." + std::to_string(::getpid()) + "." + std::to_string(++writes);
  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644));
  if (fd.get() < 0) return io_error(path, "cannot create " + temp, errno);
  const auto fail = [&](const char* what, int err) {
    ::unlink(temp.c_str());
    return io_error(path, what, err);
  };
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd.get(), bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write", n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail("cannot sync", errno);
  if (::close(fd.release()) != 0) return fail("cannot close", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail("cannot rename over", errno);
  return {};
}

Result<FileIdentity> identity_of(int fd) {
  Result<struct statx> info = stat_of(fd, "", AT_EMPTY_PATH, "fd " + std::to_string(fd));
  if (!info) return info.error();
  return FileIdentity{(uint64_t{info->stx_dev_major} << 32) | info->stx_dev_minor, info->stx_ino};
}

Result<FileIdentity> identity_of(const std::string& path) {
  Result<struct statx> info = stat_of(AT_FDCWD, path.c_str(), 0, path);
  if (!info) return info.error();
  return FileIdentity{(uint64_t{info->stx_dev_major} << 32) | info->stx_dev_minor, info->stx_ino};
}

}  // namespace onebit::npu
