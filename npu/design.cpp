// SPDX-License-Identifier: Apache-2.0
#include "npu/design.h"

namespace onebit::npu {

const char* target_name(Target target) {
  switch (target) {
    case Target::kEmu:
      return "emu";
  }
  return "unknown";
}

std::optional<Target> target_from_name(std::string_view name) {
  if (name == "emu") return Target::kEmu;
  return std::nullopt;
}

std::string DesignKey::to_string() const {
  return std::string(target_name(target)) + " " + std::to_string(K) + "x" + std::to_string(N) + " m" +
         std::to_string(m_block);
}

std::string DesignKey::file_name() const {
  return std::string(target_name(target)) + "_" + std::to_string(K) + "x" + std::to_string(N) + "_m" +
         std::to_string(m_block) + ".elf";
}

}  // namespace onebit::npu
