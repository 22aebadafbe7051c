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

// A model file of `bytes` bytes, written and synced (clean pages, as a model written long before),
// open for reading; removed with the object.
struct ModelFile {
  char path[32] = "onebit_page_out_XXXXXX";  // in the working directory: a disk, where /tmp may be tmpfs
  size_t bytes;
  int fd = -1;
  explicit ModelFile(size_t size) : bytes(size) {
    fd = mkstemp(path);
    std::vector<uint8_t> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = pattern(i);
    if (fd < 0 || write(fd, data.data(), bytes) != static_cast<ssize_t>(bytes) || fsync(fd) != 0) fd = -1;
  }
  ~ModelFile() {
    if (fd >= 0) close(fd);
    unlink(path);
  }
  // Mapped as ORT maps an external initializer (private, readable and writable), every page made
  // resident; nullptr if that failed.
  uint8_t* map_resident() const {
    void* at = fd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (at == MAP_FAILED) return nullptr;
    auto* mapped = static_cast<uint8_t*>(at);
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i += kPage) sum += mapped[i];
    return sum > 0 ? mapped : nullptr;
  }
};

TEST(PageOut, PrivateFileMappingKeepsItsValuesAndLeavesMemory) {
  const size_t bytes = 256 * kPage;
  const ModelFile file(bytes);
  uint8_t* mapped = file.map_resident();
  ASSERT_NE(mapped, nullptr);
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

// The pages given back stay in the page cache: the next process to map the model reads memory, not disk.
TEST(PageOut, TheFileStaysInThePageCache) {
  const size_t bytes = 256 * kPage;
  const ModelFile file(bytes);
  uint8_t* mapped = file.map_resident();
  ASSERT_NE(mapped, nullptr);
  (void)onebit::page_out(mapped, bytes);
  munmap(mapped, bytes);
  // A second mapping, never touched: mincore tells which of the file's pages the page cache holds.
  void* again = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, file.fd, 0);
  ASSERT_NE(again, MAP_FAILED);
  std::vector<unsigned char> cached(bytes / kPage);
  ASSERT_EQ(mincore(again, bytes, cached.data()), 0);
  munmap(again, bytes);
  size_t pages = 0;
  for (unsigned char c : cached) pages += c & 1;
  EXPECT_EQ(pages, cached.size()) << "pages of the file still in the page cache";
}

}  // namespace
