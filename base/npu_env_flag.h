// SPDX-License-Identifier: Apache-2.0
// The device runtime's debugging switches (ONEBIT_NPU_NO_C_NARROW, ONEBIT_NPU_DBG,
// ONEBIT_NPU_C_SYNC_PROF), read from the environment under their current names and, for one
// release, their old ones. Nothing here knows a device: it reads the environment only.
#pragma once

namespace onebit::npu {

// The switch ONEBIT_NPU_<name>: "1", "yes", ... = on; unset, "" or "0" = off. When it is unset, the
// old name NPU_<name> is still read for one release, with a deprecation warning on stderr (once).
bool npu_env_flag(const char* name);

}  // namespace onebit::npu
