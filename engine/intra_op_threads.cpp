// SPDX-License-Identifier: Apache-2.0
#include "engine/intra_op_threads.h"

#include <cstdlib>

namespace onebit {

bool intra_op_threads_sleep(const std::map<std::string, std::string>& config) {
  const auto value = [&](const char* key) -> const std::string* {
    const auto it = config.find(key);
    return it == config.end() ? nullptr : &it->second;
  };
  if (const std::string* spinning = value("session.intra_op.allow_spinning"); spinning && *spinning != "1") return true;
  // ORT takes digits only (anything else, a sign or a space included, leaves its default spin).
  const std::string* us = value("session.intra_op.spin_duration_us");
  const bool digits = us && !us->empty() && us->find_first_not_of("0123456789") == std::string::npos;
  return digits && std::strtoull(us->c_str(), nullptr, 10) < 100;
}

}  // namespace onebit
