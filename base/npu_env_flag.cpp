// SPDX-License-Identifier: Apache-2.0
#include "base/npu_env_flag.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/warn_once.h"

namespace onebit::npu {

namespace {

bool flag_value(const char* v) { return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0; }

void warn_old_name_once(const std::string& old_name, const std::string& new_name) {
  // Never destroyed: the sync profile's exit report reads a switch from a static destructor, which
  // may run after this would have been destroyed (that use after free crashed processes at exit).
  static auto* warned = new WarnOnce;
  if (warned->first_time(old_name))
    std::fprintf(stderr, "onebit: %s is deprecated: set %s (the old name goes in the next release)\n", old_name.c_str(),
                 new_name.c_str());
}

}  // namespace

bool npu_env_flag(const char* name) {
  const std::string new_name = std::string("ONEBIT_NPU_") + name, old_name = std::string("NPU_") + name;
  if (const char* v = std::getenv(new_name.c_str())) return flag_value(v);
  const char* old = std::getenv(old_name.c_str());
  if (old == nullptr) return false;
  warn_old_name_once(old_name, new_name);
  return flag_value(old);
}

}  // namespace onebit::npu
