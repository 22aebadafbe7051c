// SPDX-License-Identifier: Apache-2.0
// The on-disk design cache: one file per design (DesignKey::file_name()) in the folder of this
// generator version (builder-<kDesignBuilderVersion>) under a directory the caller gives (the EP
// option designs_dir; default_designs_dir() otherwise). A miss builds the
// design with the generator and writes it atomically (temp file + rename), then reads it back
// through the validating loader, so what is used is always what is on disk. A file that is
// present but invalid is rejected with its reason and left alone (never silently rebuilt):
// delete it to have it rebuilt.
#pragma once
#include <string>

#include "base/error.h"
#include "npu/design.h"
#include "npu/design_source.h"

namespace onebit::npu {

// $XDG_CACHE_HOME/onebit-ep/designs, else $HOME/.cache/onebit-ep/designs, else
// /tmp/onebit-ep-designs.
std::string default_designs_dir();

class DesignCache : public DesignSource {
 public:
  explicit DesignCache(std::string dir = default_designs_dir()) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  // <dir>/builder-<kDesignBuilderVersion>: where this version's designs live.
  std::string version_dir() const;
  std::string path_of(const DesignKey& key) const { return version_dir() + "/" + key.file_name(); }

  // Load the design for `key`, building it on a miss.
  Result<CachedDesign> get(const DesignKey& key) const override;

 private:
  std::string dir_;
};

}  // namespace onebit::npu
