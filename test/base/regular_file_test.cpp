// SPDX-License-Identifier: Apache-2.0
// Opening the files the EP is pointed at: regular files only, never blocking, size-bounded, and
// every error names the path and the errno. ctest gives this suite a time limit, so a FIFO that
// blocks fails it instead of hanging.
#include "base/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "npu_test_util.h"

namespace onebit::npu {
namespace {

using onebit_npu_test::TempDir;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void expect_error(const Status& status, const std::string& want) {
  ASSERT_FALSE(status);
  EXPECT_EQ(status.code(), ErrorCode::kIo);
  EXPECT_EQ(status.reason(), want);
}

TEST(RegularFile, ReadsTheWholeFile) {
  TempDir tmp;
  const std::string text(100'000, 'x');
  write_text(tmp.file("a"), text);
  Result<std::vector<uint8_t>> bytes = read_regular_file(tmp.file("a"), text.size());
  ASSERT_TRUE(bytes) << bytes.error().reason;
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), text);
  write_text(tmp.file("empty"), "");
  EXPECT_TRUE(read_regular_file(tmp.file("empty"), 0)->empty());
}

TEST(RegularFile, LargerThanTheBoundIsRefused) {
  TempDir tmp;
  write_text(tmp.file("a"), std::string(101, 'x'));
  expect_error(read_regular_file(tmp.file("a"), 100).status(),
               tmp.file("a") + ": larger than 100 bytes, the most expected");
}

TEST(RegularFile, FifoIsRefusedWithoutBlocking) {
  TempDir tmp;
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_error(read_regular_file(fifo, 100).status(), fifo + ": a FIFO, expected a regular file");
  expect_error(open_regular_file(fifo, FileAccess::kReadWriteCreate).status(),
               fifo + ": a FIFO, expected a regular file");
  // For writing with no reader, open itself fails (ENXIO) rather than waiting for one.
  expect_error(open_regular_file(fifo, FileAccess::kWriteCreate).status(),
               fifo + ": cannot open: No such device or address (errno 6)");
}

TEST(RegularFile, DevicesAndDirectoriesAreRefused) {
  TempDir tmp;
  expect_error(read_regular_file("/dev/zero", 100).status(), "/dev/zero: a character device, expected a regular file");
  expect_error(read_regular_file(tmp.path(), 100).status(), tmp.path() + ": a directory, expected a regular file");
  expect_error(open_regular_file(tmp.path(), FileAccess::kWriteCreate).status(),
               tmp.path() + ": cannot open: Is a directory (errno 21)");
}

// What is in the directory, sorted: a failed write must leave no temporary file behind.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(RegularFile, WritesReplaceTheFileWholeAndFailuresLeaveNothing) {
  TempDir tmp;
  const std::string path = tmp.file("trace.json"), text(70'000, 'y');
  ASSERT_TRUE(write_file_atomically(path, "old contents", 12));
  ASSERT_TRUE(write_file_atomically(path, text.data(), text.size()));
  Result<std::vector<uint8_t>> written = read_regular_file(path, text.size());
  ASSERT_TRUE(written) << written.error().reason;
  EXPECT_EQ(std::string(written->begin(), written->end()), text);
  // A FIFO in the file's place is replaced, never written into (which would block without a reader).
  const std::string fifo = tmp.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_TRUE(write_file_atomically(fifo, "whole", 5));
  EXPECT_EQ(read_regular_file(fifo, 5)->size(), 5u);
  // A directory in its place, or a missing directory: an error naming the path and the step.
  ASSERT_EQ(::mkdir(tmp.file("dir").c_str(), 0700), 0);
  const Status into_dir = write_file_atomically(tmp.file("dir"), "x", 1);
  ASSERT_FALSE(into_dir);
  EXPECT_EQ(into_dir.reason(), tmp.file("dir") + ": cannot rename over: Is a directory (errno 21)");
  const Status missing = write_file_atomically(tmp.file("no-dir/x.json"), "x", 1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.reason().rfind(tmp.file("no-dir/x.json") + ": cannot create ", 0), 0u) << missing.reason();
  EXPECT_EQ(listing(tmp.path()), (std::vector<std::string>{"dir", "fifo", "trace.json"}));
}

TEST(RegularFile, MissingNamesPathAndErrno) {
  TempDir tmp;
  expect_error(read_regular_file(tmp.file("nope"), 100).status(),
               tmp.file("nope") + ": cannot open: No such file or directory (errno 2)");
  expect_error(open_regular_file(tmp.file("no-dir/lock"), FileAccess::kReadWriteCreate).status(),
               tmp.file("no-dir/lock") + ": cannot open: No such file or directory (errno 2)");
}

TEST(RegularFile, IdentityTellsWhetherThePathStillNamesTheOpenFile) {
  TempDir tmp;
  const std::string path = tmp.file("lock");
  Result<FileDescriptor> fd = open_regular_file(path, FileAccess::kReadWriteCreate);
  ASSERT_TRUE(fd);
  EXPECT_EQ(*identity_of(fd->get()), *identity_of(path));
  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_FALSE(identity_of(path));
  write_text(path, "replaced");
  EXPECT_NE(*identity_of(fd->get()), *identity_of(path));
}

}  // namespace
}  // namespace onebit::npu
