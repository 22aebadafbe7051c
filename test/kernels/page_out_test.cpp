// SPDX-License-Identifier: Apache-2.0
// page_out: never changes what memory holds (anonymous, a private file mapping, a page written
// after mapping), and gives back the resident pages of a clean file mapping — ORT's external
// initializers once the EP has packed them.
#include "kernels/page_out.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 131 + 7); }

// Resident kiB of the mapping that starts at `address`, from /proc/self/smaps.
long resident_kib(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  char start[32];
  std::snprintf(start, sizeof(start), "%lx-", reinterpret_cast<unsigned long>(address));
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.find(':') > line.find(' '))  // a mapping's header line ("start-end perms ..."), not "Field: value"
      inside = line.rfind(start, 0) == 0;
    if (inside && line.rfind("Rss:", 0) == 0) return std::stol(line.substr(4));
  }
  return -1;
}

TEST(PageOut, AnonymousMemoryKeepsItsValues) {
  std::vector<uint8_t> buffer(9 * kPage);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = pattern(i);
  (void)onebit::page_out(buffer.data() + 100, buffer.size() - 300);  // not page aligned at either end
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer[i], pattern(i)) << "byte " << i;
}

TEST(PageOut, PrivateFileMappingKeepsItsValuesAndLeavesMemory) {
  char path[] = "onebit_page_out_XXXXXX";  // in the working directory: a disk, where /tmp may be tmpfs
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const size_t bytes = 256 * kPage;
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(i);
  ASSERT_EQ(write(fd, data.data(), bytes), static_cast<ssize_t>(bytes));
  ASSERT_EQ(fsync(fd), 0);  // clean pages, as a model file written long before
  // As ORT maps an external initializer: private, readable and writable.
  auto* mapped = static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  close(fd);
  unlink(path);
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes; i += kPage) sum += mapped[i];  // make every page resident
  ASSERT_GT(sum, 0u);
  mapped[5 * kPage] ^= 0xFF;  // one page written: now the process's own copy
  const long before = resident_kib(mapped);
  const bool advised = onebit::page_out(mapped, bytes);
  const long after = resident_kib(mapped);  // before the check below makes the pages resident again
  for (size_t i = 0; i < bytes; ++i)
    ASSERT_EQ(mapped[i], i == 5 * kPage ? uint8_t(pattern(i) ^ 0xFF) : pattern(i)) << "byte " << i;
  munmap(mapped, bytes);
  if (!advised) GTEST_SKIP() << "this kernel has no MADV_PAGEOUT";
  EXPECT_EQ(before, long(bytes / 1024));
  EXPECT_LE(after, before / 4) << "resident kiB of the mapping before " << before << ", after " << after;
}

}  // namespace
