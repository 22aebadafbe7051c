// SPDX-License-Identifier: Apache-2.0
// Where DeviceGemm gets its designs: one per DesignKey, whoever makes them. The emulator's
// on-disk cache (npu/emu/design_cache.h) is one; a hardware backend would bring its own, so the
// core never names the emulator's toolchain.
#pragma once
#include <string>

#include "base/error.h"
#include "npu/design.h"

namespace onebit::npu {

struct CachedDesign {
  Design design;
  std::string path;
  bool built = false;  // true: built and written on this call (a miss); false: read from disk
};

class DesignSource {
 public:
  virtual ~DesignSource() = default;
  // The design for `key`, or why there is none (kDesign, kIo, kInvalidArgument).
  virtual Result<CachedDesign> get(const DesignKey& key) const = 0;
};

}  // namespace onebit::npu
