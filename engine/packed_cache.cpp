// SPDX-License-Identifier: Apache-2.0
#include "engine/packed_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/regular_file.h"
#include "engine/shared_weights.h"
#include "kernels/packed_bytes.h"

namespace onebit {

namespace {

constexpr char kMagic[8] = {'o', 'n', 'e', 'b', 'i', 't', 'P', 'K'};
// This file's format: the header below and the 64-byte aligned key and sections after it, hashed
// by content_hash (version 2: its four-lane form).
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kMaxSections = 4;
constexpr size_t kAlign = 64;
// A writer's temporary file this old was abandoned (its process died mid-write).
constexpr time_t kAbandonedSeconds = 3600;

struct FileHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t layout_version;  // kPackedLayoutVersion of the library that wrote it
  uint64_t key_bytes;
  uint64_t section_count;
  uint64_t section_bytes[kMaxSections];
  uint64_t file_bytes;
  uint64_t payload_hash;  // content_hash of the key, then each section
  uint64_t header_hash;   // content_hash of every field above
  uint8_t padding[128 - 88];
};
static_assert(sizeof(FileHeader) == 128, "the header is 128 bytes, a whole number of kAlign");

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

uint64_t header_hash_of(const FileHeader& h) { return content_hash(&h, offsetof(FileHeader, header_hash)); }

// Where the key and each section start, and the file's size, for these sizes.
struct Layout {
  size_t key_offset = sizeof(FileHeader);
  std::vector<size_t> section_offsets;
  size_t file_bytes = 0;

  Layout(size_t key_bytes, const std::vector<size_t>& section_bytes) {
    size_t at = aligned(key_offset + key_bytes);
    for (size_t bytes : section_bytes) {
      section_offsets.push_back(at);
      at = aligned(at + bytes);
    }
    file_bytes = at;
  }
};

// A read-only shared mapping, unmapped with its last holder.
struct Mapping {
  void* address = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, bytes);
  }
};

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

std::string PackedCache::path_of(const std::string& key) const {
  return dir_ + "/" + hex16(content_hash(key.data(), key.size())) + kPackedCacheSuffix;
}

std::optional<CacheEntry> PackedCache::load(const std::string& key, const std::vector<size_t>& section_bytes,
                                            std::string& problem) const {
  problem.clear();
  const std::string path = path_of(key);
  // statx, never stat/lstat/fstat: those bind to glibc 2.33, and the EP must load on 2.28.
  struct statx link{};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_TYPE, &link) != 0 && errno == ENOENT)
    return std::nullopt;
  const auto fail = [&](const std::string& what) {
    problem = path + ": " + what;
    return std::nullopt;
  };
  // Non-blocking and regular files only: a FIFO or a directory in the entry's place is an error, not a hang.
  npu::Result<npu::FileDescriptor> fd = npu::open_regular_file(path, npu::FileAccess::kRead);
  if (!fd) {
    problem = fd.error().reason;
    return std::nullopt;
  }
  struct statx info{};
  if (::statx(fd->get(), "", AT_EMPTY_PATH, STATX_SIZE, &info) != 0)
    return fail(std::string("cannot stat: ") + std::strerror(errno));
  const Layout layout(key.size(), section_bytes);
  const auto file_bytes = static_cast<uint64_t>(info.stx_size);
  if (file_bytes != layout.file_bytes)
    return fail(std::to_string(file_bytes) + " bytes where this weight's entry has " +
                std::to_string(layout.file_bytes) + " (truncated, or another weight's)");
  auto mapping = std::make_shared<Mapping>();
  mapping->bytes = layout.file_bytes;
  // MAP_POPULATE: the caller reads every page next (packs_to); one bulk fault beats one per page.
  mapping->address = ::mmap(nullptr, mapping->bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd->get(), 0);
  if (mapping->address == MAP_FAILED) return fail(std::string("cannot map: ") + std::strerror(errno));
  const auto* base = static_cast<const uint8_t*>(mapping->address);

  FileHeader header;
  std::memcpy(&header, base, sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) return fail("not a packed-weights cache entry (magic)");
  if (header.header_hash != header_hash_of(header)) return fail("header checksum mismatch (corrupt)");
  if (header.format_version != kFormatVersion || header.layout_version != kPackedLayoutVersion)
    return fail("format " + std::to_string(header.format_version) + " layout " + std::to_string(header.layout_version) +
                ", this library reads format " + std::to_string(kFormatVersion) + " layout " +
                std::to_string(kPackedLayoutVersion));
  bool sizes_match = header.key_bytes == key.size() && header.section_count == section_bytes.size() &&
                     header.file_bytes == layout.file_bytes;
  for (size_t i = 0; sizes_match && i < section_bytes.size(); ++i)
    sizes_match = header.section_bytes[i] == section_bytes[i];
  if (!sizes_match) return fail("holds another weight's sizes");
  if (std::memcmp(base + layout.key_offset, key.data(), key.size()) != 0) return fail("holds another key");

  CacheEntry entry;
  for (size_t i = 0; i < section_bytes.size(); ++i)
    entry.sections.push_back({base + layout.section_offsets[i], section_bytes[i]});
  entry.payload_hash = header.payload_hash;
  entry.mapping = std::move(mapping);
  return entry;
}

void PackedCache::mark_used(const std::string& key) const {
  (void)::utimensat(AT_FDCWD, path_of(key).c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // best effort
}

uint64_t payload_hash_of(const std::string& key, const std::vector<CacheSection>& sections) {
  uint64_t hash = content_hash(key.data(), key.size());
  for (const CacheSection& s : sections) hash = content_hash(s.data, s.bytes, hash);
  return hash;
}

std::string PackedCache::store(const std::string& key, const std::vector<CacheSection>& sections) const {
  std::vector<size_t> section_bytes;
  for (const CacheSection& s : sections) section_bytes.push_back(s.bytes);
  const Layout layout(key.size(), section_bytes);
  const std::string path = path_of(key);
  if (sections.size() > kMaxSections) return path + ": too many sections";
  if (layout.file_bytes > max_bytes_)
    return path + ": an entry of " + std::to_string((layout.file_bytes + (1 << 20) - 1) >> 20) +
           " MiB does not fit packed_cache_max_mb=" + std::to_string(max_bytes_ >> 20);
  make_room(layout.file_bytes);

  std::vector<uint8_t> file(layout.file_bytes, 0);
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.format_version = kFormatVersion;
  header.layout_version = kPackedLayoutVersion;
  header.key_bytes = key.size();
  header.section_count = sections.size();
  header.file_bytes = layout.file_bytes;
  std::memcpy(file.data() + layout.key_offset, key.data(), key.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    header.section_bytes[i] = sections[i].bytes;
    if (sections[i].bytes > 0)
      std::memcpy(file.data() + layout.section_offsets[i], sections[i].data, sections[i].bytes);
  }
  header.payload_hash = payload_hash_of(key, sections);
  header.header_hash = header_hash_of(header);
  std::memcpy(file.data(), &header, sizeof header);
  const npu::Status written = npu::write_file_atomically(path, file.data(), file.size());
  return written ? "" : written.reason();
}

void PackedCache::make_room(uint64_t incoming) const {
  struct Entry {
    std::string path;
    uint64_t bytes;
    statx_timestamp used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) return;  // the write that follows reports the folder's trouble
  const std::string suffix = kPackedCacheSuffix;
  const time_t now = ::time(nullptr);
  while (const dirent* d = ::readdir(dir)) {
    const std::string name = d->d_name;
    const std::string path = dir_ + "/" + name;
    struct statx info{};
    if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_SIZE | STATX_MTIME, &info) != 0 ||
        !S_ISREG(info.stx_mode))
      continue;
    if (name.ends_with(suffix)) {
      entries.push_back({path, static_cast<uint64_t>(info.stx_size), info.stx_mtime});
      total += static_cast<uint64_t>(info.stx_size);
    } else if (name.find(suffix + std::string(".partial.")) != std::string::npos &&
               now - info.stx_mtime.tv_sec > kAbandonedSeconds) {
      ::unlink(path.c_str());
    }
  }
  ::closedir(dir);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry& e : entries) {
    if (total + incoming <= max_bytes_) break;
    if (::unlink(e.path.c_str()) == 0) total -= e.bytes;
  }
}

}  // namespace onebit
