// SPDX-License-Identifier: Apache-2.0
// The one ORT of the process: the libonnxruntime.so.1 file onnxruntime-node ships, loaded by path
// (so both addons share one library and one env), with libonebit_ep.so registered once.
#pragma once
#include <onnxruntime_c_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace onebit::node {

using CounterList = std::vector<std::pair<std::string, uint64_t>>;

struct OrtRuntime {
  const OrtApi* api = nullptr;
  OrtEnv* env = nullptr;
  const OrtEpDevice* ep_device = nullptr;  // the device whose EP name is OnebitExecutionProvider
  std::string ort_version;
  std::string ep_library_path;
  int ep_api_version = 0;

  // Reads a live session's counters (or the process sums for an empty id); false if no such session.
  bool counters(const std::string& session_id, CounterList& out) const;

  // Set by load(): OnebitEp_GetCounters from the EP library.
  void* get_counters = nullptr;
};

// Loads ORT and registers the EP on the first call; later calls must name the same files and
// return the same runtime. Throws CodedError ("ONEBIT_ORT", "ONEBIT_EP_LIBRARY") with advice.
const OrtRuntime& load_runtime(const std::string& ort_library_path, const std::string& ep_library_path);

// The runtime loaded before; throws CodedError("ONEBIT_NOT_INITIALIZED") if there is none.
const OrtRuntime& runtime();

// Throws CodedError("ONEBIT_ORT", ORT's message) if `status` is an error, releasing it.
void check(OrtStatus* status);

}  // namespace onebit::node
