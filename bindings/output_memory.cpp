// SPDX-License-Identifier: Apache-2.0
#include "output_memory.h"

#include <cstdint>
#include <map>
#include <mutex>

#include "ort_runtime.h"

namespace onebit::node {

namespace {

struct Range {
  uintptr_t end;
  std::weak_ptr<OrtValue> owner;
};

std::mutex registry_mutex;
std::map<uintptr_t, Range>& registry() {                   // by start address; ranges never overlap (live memory)
  static auto* ranges = new std::map<uintptr_t, Range>();  // never destroyed: finalizers may run at exit
  return *ranges;
}

}  // namespace

SharedOutput share_output(OrtValue* value, const void* data, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(data);
  // The range is forgotten before the memory is released, so a lookup never finds freed memory.
  SharedOutput owner(value, [start](OrtValue* v) {
    {
      std::lock_guard<std::mutex> lock(registry_mutex);
      registry().erase(start);
    }
    runtime().api->ReleaseValue(v);
  });
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[start] = Range{start + bytes, owner};
  return owner;
}

SharedOutput find_output(const void* data, size_t bytes) {
  const auto start = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto after = registry().upper_bound(start);
  if (after == registry().begin()) return nullptr;
  const Range& range = std::prev(after)->second;
  if (start + bytes > range.end) return nullptr;
  return range.owner.lock();  // null while its last owner is being released
}

}  // namespace onebit::node
