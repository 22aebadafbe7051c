// SPDX-License-Identifier: Apache-2.0
// Once a weight is packed, the EP never reads ORT's copy again, and ORT frees it after Compile.
// Until then both copies would count in the process's memory: ORT maps external-data
// initializers from their file, and reading them to pack makes those pages resident. Giving them
// back keeps the peak near one copy:
// - pages of the file (mapped and never written: /proc/self/pagemap says so) are unmapped
//   (MADV_DONTNEED); they stay in the page cache, so the next process that maps the model reads
//   them from memory, not from disk (MADV_PAGEOUT evicted them from the page cache too);
// - anything else (anonymous memory, a page the process wrote) is offered to swap (MADV_PAGEOUT).
// Neither changes contents: a dropped file page is read again from the file if touched. The
// caller's conditions: nothing writes the range meanwhile, and it is memory from the heap or a
// mapping of a file or shared memory (ORT's constant initializers are). Pages a driver placed in a
// mapping (an io_uring or packet-socket ring) also show as not anonymous, but nothing brings them
// back once unmapped: the next read faults.
#pragma once
#include <cstddef>

namespace onebit {

// Advises the kernel to reclaim the whole pages inside [data, data + bytes). Best effort: returns
// whether the kernel took the advice (false where MADV_PAGEOUT does not exist, before Linux 5.4).
bool page_out(const void* data, size_t bytes) noexcept;

}  // namespace onebit
