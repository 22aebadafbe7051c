// SPDX-License-Identifier: Apache-2.0
#include "kernels/page_out.h"

#include <algorithm>
#include <array>
#include <cstdint>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace onebit {

#if defined(__linux__) && defined(MADV_PAGEOUT)
namespace {

// /proc/self/pagemap flags of one page (Linux Documentation/admin-guide/mm/pagemap.rst).
constexpr uint64_t kPresent = uint64_t{1} << 63;
constexpr uint64_t kFileOrShared = uint64_t{1} << 61;

// Drops the mapped pages of [begin, end) that are file or shared pages: their contents live on in the
// page cache and come back on the next touch, so the file stays cached for the next process to map.
// A private page the process wrote is anonymous and is left alone. Returns false if pagemap is unreadable.
bool drop_file_pages(uintptr_t begin, uintptr_t end, uintptr_t page) {
  const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::array<uint64_t, 512> entries;  // pages looked up at a time
  bool ok = true;
  for (uintptr_t at = begin; at < end && ok;) {
    const size_t pages = std::min<size_t>(entries.size(), (end - at) / page);
    const auto bytes = static_cast<ssize_t>(pages * sizeof(uint64_t));
    ok = pread(fd, entries.data(), static_cast<size_t>(bytes), static_cast<off_t>(at / page * sizeof(uint64_t))) ==
         bytes;
    const auto droppable = [&](size_t i) {
      return (entries[i] & (kPresent | kFileOrShared)) == (kPresent | kFileOrShared);
    };
    for (size_t i = 0; ok && i < pages;) {  // each run of droppable pages in one call
      size_t run = i;
      while (run < pages && droppable(run)) ++run;
      if (run > i) (void)madvise(reinterpret_cast<void*>(at + i * page), (run - i) * page, MADV_DONTNEED);
      i = std::max(run, i + 1);
    }
    at += pages * page;
  }
  close(fd);
  return ok;
}

}  // namespace
#endif

bool page_out(const void* data, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_PAGEOUT)
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end <= begin) return true;
  const bool dropped = drop_file_pages(begin, end, page);
  // What is left is anonymous: reclaiming it means swap, which keeps the contents too.
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT) == 0 || dropped;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace onebit
