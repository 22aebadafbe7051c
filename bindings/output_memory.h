// SPDX-License-Identifier: Apache-2.0
// The memory of the outputs handed to JS. Each output OrtValue is owned jointly by its external
// ArrayBuffer and by every run that reads it back as an input (a decoder's KV cache): such an input
// is read in place, not copied, and stays valid however the caller transfers or drops the buffer
// meanwhile. Lookups by address, from any thread.
#pragma once
#include <onnxruntime_c_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace onebit::node {

using SharedOutput = std::shared_ptr<OrtValue>;

// Bytes in memory: a tensor's data.
struct ByteRange {
  const uint8_t* begin = nullptr;
  size_t size = 0;
  bool overlaps(const ByteRange& o) const {
    return size > 0 && o.size > 0 && begin < o.begin + o.size && o.begin < begin + size;
  }
  bool operator==(const ByteRange& o) const { return begin == o.begin && size == o.size; }
};

// Takes `value`, whose data is [data, data + bytes): the returned owner releases it (and forgets
// the range) when the last copy of it goes.
SharedOutput share_output(OrtValue* value, const void* data, size_t bytes);

// The output whose memory holds all of [data, data + bytes), or null if none does.
SharedOutput find_output(const void* data, size_t bytes);

}  // namespace onebit::node
