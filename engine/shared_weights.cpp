// SPDX-License-Identifier: Apache-2.0
#include "engine/shared_weights.h"

#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "engine/packed_cache.h"

namespace onebit {

namespace {

// The fields of a key, space separated: readable in a debugger, and no two field lists collide.
template <typename... Fields>
std::string key_of(const char* kind, Fields... fields) {
  std::string key = kind;
  ((key += ' ', key += std::to_string(fields)), ...);
  return key;
}

// The sections a packing is stored as in a cache entry, and the packing a loaded entry's sections
// (views into its mapping) make with `geometry`'s fields.
std::vector<CacheSection> sections_of(const PackedWeights& p) {
  return {{p.blocks.data(), p.blocks.size()},
          {p.zero_point.data(), p.zero_point.size() * sizeof(int32_t)},
          {p.col_sum.data(), p.col_sum.size() * sizeof(int32_t)}};
}

std::vector<CacheSection> sections_of(const PackedNBits& p) { return {{p.data.data(), p.data.size()}}; }

std::vector<size_t> section_bytes_of(const PackedWeights& geometry) {
  const auto columns = static_cast<size_t>(geometry.N) * sizeof(int32_t);
  return {static_cast<size_t>(geometry.n_blocks() * geometry.block_bytes()), columns, columns};
}

std::vector<size_t> section_bytes_of(const PackedNBits& geometry) {
  return {static_cast<size_t>(geometry.tiles() * geometry.tile_stride())};
}

PackedWeights from_entry(PackedWeights p, const CacheEntry& entry) {
  const CacheSection &blocks = entry.sections[0], &zero_point = entry.sections[1], &col_sum = entry.sections[2];
  p.blocks = PackedBytes<int8_t>(entry.mapping, static_cast<const int8_t*>(blocks.data), blocks.bytes);
  // Per-column values are small: copied, so that only the blocks stay mapped.
  const auto* zp = static_cast<const int32_t*>(zero_point.data);
  p.zero_point.assign(zp, zp + zero_point.bytes / sizeof(int32_t));
  const auto* sums = static_cast<const int32_t*>(col_sum.data);
  p.col_sum.assign(sums, sums + col_sum.bytes / sizeof(int32_t));
  return p;
}

PackedNBits from_entry(PackedNBits p, const CacheEntry& entry) {
  p.data =
      PackedBytes<uint8_t>(entry.mapping, static_cast<const uint8_t*>(entry.sections[0].data), entry.sections[0].bytes);
  return p;
}

bool same_sections(const std::vector<CacheSection>& a, const std::vector<CacheSection>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes != b[i].bytes || std::memcmp(a[i].data, b[i].data, a[i].bytes) != 0) return false;
  return a.size() == b.size();
}

// A registry miss with a cache folder: `key`'s entry when it reads back as this weight (`same`);
// else `pack()`, written to the cache and served from the written file, which every later process
// maps (after a byte-for-byte comparison with the packing: the file may have been replaced since).
// `geometry` holds the packing's fields but its bytes.
template <typename Packed>
Packed cached_or_packed(const PackedCache& cache, const std::string& key, const Packed& geometry,
                        const std::function<bool(const Packed&)>& same, const std::function<Packed()>& pack,
                        PackOutcome& out) {
  const std::vector<size_t> bytes = section_bytes_of(geometry);
  std::string problem;
  if (std::optional<CacheEntry> entry = cache.load(key, bytes, problem)) {
    Packed mapped = from_entry(geometry, *entry);
    if (same(mapped)) {
      cache.mark_used(key);
      out.origin = PackOutcome::Origin::CacheFile;
      return mapped;
    }
    problem = cache.path_of(key) + (payload_hash_of(key, entry->sections) == entry->payload_hash
                                        ? ": does not read back as this weight's packing"
                                        : ": payload checksum mismatch (corrupt)");
  }
  out.origin = PackOutcome::Origin::Packed;
  Packed packed = pack();
  if (std::string failed = cache.store(key, sections_of(packed)); !failed.empty()) {
    out.cache_problem = problem.empty() ? failed : problem + "; " + failed;
    return packed;
  }
  out.cache_problem = problem;
  std::string reload_problem;
  if (std::optional<CacheEntry> entry = cache.load(key, bytes, reload_problem)) {
    Packed mapped = from_entry(geometry, *entry);
    if (same_sections(sections_of(mapped), sections_of(packed))) {
      out.cache_written = true;
      return mapped;
    }
  }
  return packed;  // the written file was replaced meanwhile by one that differs: keep the packing
}

}  // namespace

uint64_t content_hash(const void* data, size_t bytes, uint64_t seed) {
  // Eight bytes at a time, each word mixed in by a multiply (64-bit golden ratio) and a shift, in
  // four independent lanes over consecutive words (one chain ran at a third of this speed: the
  // multiply's latency), folded into one at the end.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  constexpr size_t kLanes = 4;
  const auto* p = static_cast<const unsigned char*>(data);
  const auto mix = [](uint64_t h, uint64_t word) {
    h = (h ^ word) * kMul;
    return h ^ (h >> 29);
  };
  uint64_t lane[kLanes];
  for (size_t j = 0; j < kLanes; ++j) lane[j] = seed ^ ((bytes + j) * kMul);
  size_t i = 0;
  for (; i + 8 * kLanes <= bytes; i += 8 * kLanes)
    for (size_t j = 0; j < kLanes; ++j) {
      uint64_t word;
      std::memcpy(&word, p + i + 8 * j, 8);
      lane[j] = mix(lane[j], word);
    }
  uint64_t h = lane[0];
  for (size_t j = 1; j < kLanes; ++j) h = mix(h, lane[j]);
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = mix(h, word);
  }
  uint64_t tail = 0;
  if (i < bytes) std::memcpy(&tail, p + i, bytes - i);
  h = (h ^ tail) * kMul;
  return h ^ (h >> 32);
}

PackRegistry<PackedWeights>& packed_weights_registry() {
  static auto* registry = new PackRegistry<PackedWeights>;  // never destroyed: groups may outlive statics at exit
  return *registry;
}

PackRegistry<PackedNBits>& packed_nbits_registry() {
  static auto* registry = new PackRegistry<PackedNBits>;
  return *registry;
}

std::shared_ptr<const PackedWeights> shared_pack_weights(const void* w, QType type, int64_t K, int64_t N, bool b_is_nk,
                                                         const int32_t* zero_points, int64_t zero_point_count,
                                                         const WeightSharing& sharing, KGroup group,
                                                         PackOutcome* outcome) {
  PackOutcome ignored;
  PackOutcome& out = outcome != nullptr ? *outcome : ignored;
  const auto pack = [&] { return pack_weights(w, type, K, N, b_is_nk, zero_points, zero_point_count, group); };
  if (!sharing.in_process) return std::make_shared<const PackedWeights>(pack());
  const auto same = [&](const PackedWeights& p) {
    return p.group == group && packs_to(p, w, type, K, N, b_is_nk, zero_points, zero_point_count);
  };
  const size_t zp_values = zero_points == nullptr ? 0 : static_cast<size_t>(zero_point_count);
  const uint64_t hash =
      content_hash(zero_points, zp_values * sizeof(int32_t), content_hash(w, static_cast<size_t>(K * N)));
  const std::string key = key_of("q8", int(type), K, N, int(b_is_nk), int64_t(group), zp_values, hash);
  out.origin = PackOutcome::Origin::Registry;  // unless the registry calls the packing below
  return packed_weights_registry().find_or_pack(key, same, [&] {
    if (sharing.cache == nullptr) {
      out.origin = PackOutcome::Origin::Packed;
      return pack();
    }
    PackedWeights geometry;
    geometry.K = K;
    geometry.N = N;
    geometry.group = group;
    return cached_or_packed<PackedWeights>(*sharing.cache, key, geometry, same, pack, out);
  });
}

std::shared_ptr<const PackedNBits> shared_pack_nbits(const NBitsWeights& w, const WeightSharing& sharing,
                                                     std::string& error, PackOutcome* outcome) {
  PackOutcome ignored;
  PackOutcome& out = outcome != nullptr ? *outcome : ignored;
  const auto pack = [&] {
    PackedNBits p;
    error = pack_nbits_weights(w, p);
    return p;
  };
  if (!sharing.in_process) {
    PackedNBits own = pack();
    return error.empty() ? std::make_shared<const PackedNBits>(std::move(own)) : nullptr;
  }
  // The hash reads the sizes the views declare; malformed weights fail in the packing (their empty
  // entry is freed on return).
  uint64_t hash = content_hash(w.b, static_cast<size_t>(w.b_bytes));
  hash = content_hash(w.scales, static_cast<size_t>(w.scale_count) * sizeof(float), hash);
  if (w.zero_points != nullptr) hash = content_hash(w.zero_points, static_cast<size_t>(w.zero_point_bytes), hash);
  const std::string key =
      key_of("nbits", w.K, w.N, w.bits, w.block_size, int(w.zero_points != nullptr), w.b_bytes, w.scale_count, hash);
  out.origin = PackOutcome::Origin::Registry;  // unless the registry calls the packing below
  std::shared_ptr<const PackedNBits> packed = packed_nbits_registry().find_or_pack(
      key, [&](const PackedNBits& p) { return packs_to(p, w); },
      [&] {
        PackedNBits geometry;
        // Malformed weights are packed (to their error) and never cached.
        if (sharing.cache == nullptr || !packed_nbits_geometry(w, geometry).empty()) {
          out.origin = PackOutcome::Origin::Packed;
          return pack();
        }
        return cached_or_packed<PackedNBits>(
            *sharing.cache, key, geometry, [&](const PackedNBits& p) { return packs_to(p, w); }, pack, out);
      });
  return error.empty() ? packed : nullptr;
}

}  // namespace onebit
