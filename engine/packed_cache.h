// SPDX-License-Identifier: Apache-2.0
// The packed-weights cache folder (option packed_cache_dir): packed weights written once per
// content key and mapped read-only by every process that needs them, so those processes share one
// copy of the pages through the page cache and skip the packing.
//
// An entry is one file, named after its key (which holds the weight's content hash), written whole
// by write_file_atomically (a temporary file renamed over the name: racing writers each write
// their own, the last rename wins, a reader sees a whole file or none). It holds a header (magic,
// format version, packed layout version, sizes, a checksum of the header and one of the payload),
// the key, then the sections of the packed weight, each 64-byte aligned. Loading checks the header
// (magic, versions, sizes, its checksum) and the key before anything is read from the payload; the
// caller then reads the whole payload back against the model's weight (packs_to), which is what
// makes a wrong number impossible, even from a foreign file whose checksums hold. That comparison
// covers every byte the payload checksum does, so the checksum is computed only when it fails, to
// tell a corrupt file from a foreign one in the warning: one pass over the payload, not two.
//
// Growth is bounded: before writing an entry the least recently used ones (file times, refreshed
// whenever an entry is served) are removed until the folder's entries fit max_bytes. A process
// that has an entry mapped keeps its pages when the file is removed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace onebit {

// The entries' file name suffix; eviction and the docs' cleanup command match on it.
constexpr const char* kPackedCacheSuffix = ".onebit-pack";

// A section of an entry: `bytes` bytes at `data`.
struct CacheSection {
  const void* data = nullptr;
  size_t bytes = 0;
};

// A loaded entry: its sections, views into a read-only mapping that `mapping` keeps alive, and
// the payload checksum its header holds.
struct CacheEntry {
  std::shared_ptr<const void> mapping;
  std::vector<CacheSection> sections;
  uint64_t payload_hash = 0;
};

// The payload checksum of `key`'s entry holding `sections`: compare with CacheEntry::payload_hash.
uint64_t payload_hash_of(const std::string& key, const std::vector<CacheSection>& sections);

class PackedCache {
 public:
  // The folder must exist (parse_ep_options checks it); max_bytes bounds its entries' total size.
  PackedCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  // The file that holds `key`'s entry.
  std::string path_of(const std::string& key) const;

  // `key`'s entry, its header checked to hold `key` and sections of exactly `section_bytes` (what
  // the caller's weight packs to); the payload is the caller's to read back. No entry: nullopt and
  // `problem` empty. An entry that fails a check: nullopt and `problem` naming the file and the check.
  std::optional<CacheEntry> load(const std::string& key, const std::vector<size_t>& section_bytes,
                                 std::string& problem) const;

  // Marks `key`'s entry as used now (its file time), the last to be evicted: once it has been read
  // back as the weight, never for an entry that failed a check.
  void mark_used(const std::string& key) const;

  // Writes `key`'s entry (evicting least recently used entries first); "" or what failed.
  std::string store(const std::string& key, const std::vector<CacheSection>& sections) const;

 private:
  // Removes the least recently used entries until `incoming` more bytes fit (and writers'
  // temporary files abandoned long ago).
  void make_room(uint64_t incoming) const;

  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace onebit
