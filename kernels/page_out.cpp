// SPDX-License-Identifier: Apache-2.0
#include "kernels/page_out.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace onebit {

bool page_out(const void* data, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_PAGEOUT)
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  return end <= begin || madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT) == 0;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

}  // namespace onebit
