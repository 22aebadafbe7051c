// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/design_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/regular_file.h"
#include "npu/emu/design_builder.h"
#include "npu/emu/design_elf.h"

namespace onebit::npu {

namespace {

Error io_error(const std::string& what) { return make_error(ErrorCode::kIo, what + ": " + std::strerror(errno)); }

// mkdir -p
Status make_dirs(const std::string& dir) {
  if (dir.empty()) return make_error(ErrorCode::kIo, "empty designs directory");
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return io_error("mkdir " + prefix);
  }
  // open(O_DIRECTORY) rather than stat(): stat binds to glibc 2.33, and the EP must load on 2.28.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::kIo, dir + " is not a directory");
  ::close(fd);
  return {};
}

}  // namespace

std::string default_designs_dir() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  if (cache != nullptr && cache[0] == '/') return std::string(cache) + "/onebit-ep/designs";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/onebit-ep/designs";
  return "/tmp/onebit-ep-designs";
}

std::string DesignCache::version_dir() const { return dir_ + "/builder-" + std::to_string(kDesignBuilderVersion); }

Result<CachedDesign> DesignCache::get(const DesignKey& key) const {
  const std::string path = path_of(key);
  CachedDesign out;
  out.path = path;
  if (::access(path.c_str(), F_OK) != 0) {
    if (errno != ENOENT)
      return make_error(ErrorCode::kDesign,
                        "designs dir " + dir_ + ": cannot read " + path + ": " + std::strerror(errno));
    Result<Design> built = build_design(key);
    if (!built) return make_error(ErrorCode::kDesign, "cannot build " + key.to_string() + ": " + built.error().reason);
    if (Status s = make_dirs(version_dir()); !s) return make_error(ErrorCode::kDesign, "designs dir: " + s.reason());
    const std::vector<uint8_t> elf = write_design_elf(*built);
    if (Status s = write_file_atomically(path, elf.data(), elf.size()); !s)
      return make_error(ErrorCode::kDesign, "cannot write " + path + ": " + s.reason());
    out.built = true;
  }
  Result<Design> loaded = load_design_file(path, key);
  if (!loaded) return loaded.error();
  out.design = std::move(loaded).value();
  return out;
}

}  // namespace onebit::npu
