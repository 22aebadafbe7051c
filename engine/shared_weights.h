// SPDX-License-Identifier: Apache-2.0
// One packed copy of a weight per process: every session (and EP instance, and registration of
// the library) that packs the same values the same way gets the same packed weights, read-only,
// freed with the last group that holds them.
//
// A weight is found by a key of what decides its packed bytes besides the values (kernel, k
// grouping, shapes, types, bits, block size, whether zero points are given) and a 64-bit hash of
// its values; a candidate under that key is taken only if the new weight, read back through the
// packed layout value by value (`packs_to`), packs to exactly its bytes. The hash only finds
// candidates: a collision costs one comparison, never a wrong hit.
//
// On a miss, a packed-weights cache folder (engine/packed_cache.h), when the session has one,
// shares the packing across processes: an entry read back alike is mapped instead of packing, and
// a packing made here is written there and then served from the file, so every process maps the
// same pages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/gemm_q8.h"
#include "kernels/gemm_w4a8.h"

namespace onebit {

// A process-wide set of packed values, each alive while some caller holds it. Lookups of
// different keys run in parallel; lookups of one key run one at a time, so concurrent sessions
// of one model pack each weight once.
template <typename Packed>
class PackRegistry {
 public:
  // The live entry under `key` that `same` accepts, else the result of `pack`, kept under `key`.
  std::shared_ptr<const Packed> find_or_pack(const std::string& key, const std::function<bool(const Packed&)>& same,
                                             const std::function<Packed()>& pack) {
    const std::shared_ptr<Slot> slot = slot_for(key);
    std::lock_guard<std::mutex> lock(slot->mutex);
    for (const std::weak_ptr<const Packed>& entry : slot->entries)
      if (std::shared_ptr<const Packed> held = entry.lock(); held && same(*held)) return held;
    auto packed = std::make_shared<const Packed>(pack());
    // A key looked up again and again (one device opened by session after session) keeps its
    // slot: drop its freed entries here, or their weak references (and control blocks) pile up.
    std::erase_if(slot->entries, [](const std::weak_ptr<const Packed>& entry) { return entry.expired(); });
    slot->entries.push_back(packed);
    return packed;
  }

  // Entries some caller still holds (tests).
  size_t live() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t count = 0;
    for (const auto& [key, slot] : slots_) {
      std::lock_guard<std::mutex> slot_lock(slot->mutex);
      for (const std::weak_ptr<const Packed>& entry : slot->entries) count += entry.expired() ? 0 : 1;
    }
    return count;
  }

 private:
  struct Slot {
    std::mutex mutex;
    std::vector<std::weak_ptr<const Packed>> entries;
  };

  // The key's slot, created if new; slots no lookup holds and whose entries have all been freed
  // are dropped on the way, so the registry keeps nothing of released weights.
  std::shared_ptr<Slot> slot_for(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      // Only this function hands slots out, under mutex_: held by the map alone, no one can be using it.
      bool unused = it->first != key && it->second.use_count() == 1;
      if (unused)
        for (const std::weak_ptr<const Packed>& entry : it->second->entries) unused = unused && entry.expired();
      it = unused ? slots_.erase(it) : std::next(it);
    }
    std::shared_ptr<Slot>& slot = slots_[key];
    if (!slot) slot = std::make_shared<Slot>();
    return slot;
  }

  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;
};

// A hash of `bytes` bytes, chained from `seed`. Not cryptographic: it only picks candidates.
uint64_t content_hash(const void* data, size_t bytes, uint64_t seed = 0);

class PackedCache;

// How widely a packing is shared.
struct WeightSharing {
  bool in_process = true;              // with the process's other groups (ONEBIT_SHARE_WEIGHTS)
  const PackedCache* cache = nullptr;  // and with other processes, through this cache folder
};

// Where a packing came from (the counters), and what went wrong with the cache (a warning).
struct PackOutcome {
  enum class Origin { Packed, Registry, CacheFile };
  Origin origin = Origin::Packed;
  bool cache_written = false;  // packed here, written to the cache and served from the written file
  std::string cache_problem;   // an entry that failed its checks (then repacked), a write that failed
};

// pack_weights' result for these operands, shared as `sharing` says with every group that packed
// the same bytes (read back value by value); with in_process false, the caller's own copy. A
// cache entry is taken only when it reads back as this weight's packing; otherwise the weight is
// packed and its entry (re)written.
std::shared_ptr<const PackedWeights> shared_pack_weights(const void* w, QType type, int64_t K, int64_t N, bool b_is_nk,
                                                         const int32_t* zero_points, int64_t zero_point_count,
                                                         const WeightSharing& sharing = {},
                                                         KGroup group = selected_k_group(),
                                                         PackOutcome* outcome = nullptr);
// pack_nbits_weights' result, shared alike; null for malformed weights, with pack_nbits_weights'
// message in `error`.
std::shared_ptr<const PackedNBits> shared_pack_nbits(const NBitsWeights& w, const WeightSharing& sharing,
                                                     std::string& error, PackOutcome* outcome = nullptr);

// The process's registries (tests count their live entries).
PackRegistry<PackedWeights>& packed_weights_registry();
PackRegistry<PackedNBits>& packed_nbits_registry();

}  // namespace onebit
