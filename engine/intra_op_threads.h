// SPDX-License-Identifier: Apache-2.0
// What the EP reads of ORT's own intra-op thread options: whether the threads sleep between calls,
// so that a split call first waits for one to wake (CallResources::threads_sleep).
#pragma once
#include <map>
#include <string>

namespace onebit {

// Whether the session's intra-op threads sleep between calls, read from the session's config
// entries as ORT reads them: allow_spinning set to anything but "1", or a spin_duration_us under
// 100 µs (threads that spin a few µs are asleep again when the next call comes; ORT's default
// spins for ms). Unset, they spin, the default of ORT's packages (client builds of ORT default to
// sleeping, which an EP cannot see). A session on the environment's global pools: ORT ignores
// these entries and follows the environment's setting, which an EP cannot read; the EP goes by
// the entries all the same.
bool intra_op_threads_sleep(const std::map<std::string, std::string>& config);

}  // namespace onebit
