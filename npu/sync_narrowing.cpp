// SPDX-License-Identifier: Apache-2.0
#include "npu/sync_narrowing.h"

#include "base/npu_env_flag.h"

namespace onebit::npu {

SyncNarrowing SyncNarrowing::from_env() {
  SyncNarrowing s;
  s.narrow_c = !npu_env_flag("NO_C_NARROW");
  s.debug_checksum = npu_env_flag("DBG");
  return s;
}

}  // namespace onebit::npu
