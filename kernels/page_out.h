// SPDX-License-Identifier: Apache-2.0
// Once a weight is packed, the EP never reads ORT's copy again, and ORT frees it after Compile.
// Until then both copies would count in the process's memory: ORT maps external-data
// initializers from their file, and reading them to pack makes those pages resident. Asking the
// kernel to page them out (MADV_PAGEOUT) keeps the peak near one copy. The advice never changes
// contents — clean file pages are dropped and re-read if touched again, anything else stays or
// goes to swap — so it is safe on any memory, and a no-op where it does not apply.
#pragma once
#include <cstddef>

namespace onebit {

// Advises the kernel to reclaim the whole pages inside [data, data + bytes). Best effort: returns
// whether the kernel took the advice (false where MADV_PAGEOUT does not exist, before Linux 5.4).
bool page_out(const void* data, size_t bytes) noexcept;

}  // namespace onebit
