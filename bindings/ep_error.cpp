// SPDX-License-Identifier: Apache-2.0
#include "ep_error.h"

#include <algorithm>
#include <cstring>

#include "engine/ep_options.h"

namespace onebit::node {

CodedError ep_error(const std::string& ort_message) {
  // Every message of the EP starts with these words; ORT puts its own text before them.
  const size_t ours = ort_message.find("onebit: ");
  if (ours == std::string::npos) return CodedError("ONEBIT_ORT", ort_message);
  std::string message = ort_message.substr(ours);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (!message.starts_with(kOptionErrorPrefix)) return CodedError("ONEBIT_ORT", message);
  const size_t key_begin = std::strlen(kOptionErrorPrefix);
  const std::string key = message.substr(key_begin, message.find('=', key_begin) - key_begin);
  // Only a provider option is the caller's option (ONEBIT_EP_TRACE is the environment's).
  if (std::find_if(kOptionKeys.begin(), kOptionKeys.end(), [&](const char* k) { return key == k; }) ==
      kOptionKeys.end())
    return CodedError("ONEBIT_ORT", message);
  // Returned as a temporary, never a named local: moving a CodedError would call
  // std::runtime_error's move constructor, a libstdc++ symbol newer than the addon's floor.
  return CodedError("ONEBIT_OPTION", message, key);
}

}  // namespace onebit::node
