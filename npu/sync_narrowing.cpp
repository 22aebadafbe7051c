// SPDX-License-Identifier: Apache-2.0
#include "npu/sync_narrowing.h"

#include <cstdlib>
#include <cstring>

namespace onebit::npu {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

SyncNarrowing SyncNarrowing::from_env() {
  SyncNarrowing s;
  s.narrow_c = !env_flag("NPU_NO_C_NARROW");
  s.debug_checksum = env_flag("NPU_DBG");
  return s;
}

}  // namespace onebit::npu
