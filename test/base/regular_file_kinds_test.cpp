// SPDX-License-Identifier: Apache-2.0
// The one reader of the files the EP is pointed at, given every other kind of path: links to
// devices and FIFOs, a FIFO with a writer, a socket, a link loop, names no file can have, a file
// the caller may not read, and files whose size stat does not tell (procfs). Each is refused
// with the path and the reason, without blocking (ctest's time limit fails a blocked open), or,
// for procfs, read to its end within the bound. regular_file_test.cpp has the plain cases.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "base/regular_file.h"
#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::TempDir;

std::string refusal(const std::string& path, size_t max_bytes = 100) {
  Result<std::vector<uint8_t>> bytes = read_regular_file(path, max_bytes);
  if (bytes) return "read " + std::to_string(bytes->size()) + " bytes";
  EXPECT_EQ(bytes.error().code, ErrorCode::kIo);
  return bytes.error().reason;
}

TEST(RegularFileKinds, LinksAreFollowedToWhatTheyName) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo"), zero = tmp.file("zero.json"), to_fifo = tmp.file("fifo.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
  ASSERT_EQ(::symlink(fifo.c_str(), to_fifo.c_str()), 0);
  EXPECT_EQ(refusal(zero), zero + ": a character device, expected a regular file");
  EXPECT_EQ(refusal(to_fifo), to_fifo + ": a FIFO, expected a regular file");
  const std::string loop = tmp.file("loop");
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  EXPECT_EQ(refusal(loop), loop + ": cannot open: Too many levels of symbolic links (errno 40)");
}

// A writer holding the FIFO open means the open succeeds and a read would find data: it is still
// refused by its kind, before anything is read.
TEST(RegularFileKinds, FifoWithAWriterIsRefusedUnread) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets the writer open
  const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(::write(writer, "{}", 2), 2);
  EXPECT_EQ(refusal(fifo), fifo + ": a FIFO, expected a regular file");
  char left[4];
  EXPECT_EQ(::read(reader, left, sizeof left), 2);  // the data is still there
  ::close(writer);
  ::close(reader);
}

TEST(RegularFileKinds, SocketIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof address.sun_path);
  path.copy(address.sun_path, path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_EQ(refusal(path), path + ": cannot open: No such device or address (errno 6)");
  ::close(fd);
}

TEST(RegularFileKinds, NamesNoFileCanHave) {
  TempDir tmp;
  std::ofstream(tmp.file("file")) << "{}";
  EXPECT_EQ(refusal(""), ": cannot open: No such file or directory (errno 2)");
  EXPECT_EQ(refusal(tmp.file("file/")), tmp.file("file/") + ": cannot open: Not a directory (errno 20)");
  EXPECT_EQ(refusal(tmp.file("file/x.json")), tmp.file("file/x.json") + ": cannot open: Not a directory (errno 20)");
  const std::string long_name = tmp.file(std::string(300, 'n'));
  EXPECT_EQ(refusal(long_name), long_name + ": cannot open: File name too long (errno 36)");
}

// As root (which reads any mode) the read is made by a child that has become nobody.
TEST(RegularFileKinds, UnreadableFileIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("secret.json");
  std::ofstream(path) << "{}";
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);  // the folder may be searched: the file's mode refuses
  const std::string want = path + ": cannot open: Permission denied (errno 13)";
  if (::geteuid() != 0) {
    EXPECT_EQ(refusal(path), want);
    return;
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const Result<std::vector<uint8_t>> bytes =
        ::setuid(65534) == 0 ? read_regular_file(path, 100) : make_error(ErrorCode::kIo, "setuid");
    ::_exit(!bytes && bytes.error().reason == want ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child, as nobody, did not get: " << want;
}

// procfs files say size 0: the reader reads to the end rather than trusting that, and the bound
// holds on what it reads.
TEST(RegularFileKinds, SizeIsWhatIsReadNotWhatStatSays) {
  Result<std::vector<uint8_t>> status = read_regular_file("/proc/self/status", 1 << 20);
  ASSERT_TRUE(status) << status.error().reason;
  EXPECT_EQ(std::string(status->begin(), status->begin() + 5), "Name:");
  EXPECT_EQ(refusal("/proc/self/status", 16), "/proc/self/status: larger than 16 bytes, the most expected");
}

}  // namespace
}  // namespace onebit::npu
