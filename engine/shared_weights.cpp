// SPDX-License-Identifier: Apache-2.0
#include "engine/shared_weights.h"

#include <cstring>
#include <stdexcept>

namespace onebit {

namespace {

// The fields of a key, space separated: readable in a debugger, and no two field lists collide.
template <typename... Fields>
std::string key_of(const char* kind, Fields... fields) {
  std::string key = kind;
  ((key += ' ', key += std::to_string(fields)), ...);
  return key;
}

}  // namespace

uint64_t content_hash(const void* data, size_t bytes, uint64_t seed) {
  // Eight bytes at a time, each word mixed in by a multiply (64-bit golden ratio) and a shift.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (bytes * kMul);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    h = (h ^ word) * kMul;
    h ^= h >> 29;
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
                                                         bool share, KGroup group) {
  const auto pack = [&] { return pack_weights(w, type, K, N, b_is_nk, zero_points, zero_point_count, group); };
  if (!share) return std::make_shared<const PackedWeights>(pack());
  const size_t zp_values = zero_points == nullptr ? 0 : static_cast<size_t>(zero_point_count);
  const uint64_t hash =
      content_hash(zero_points, zp_values * sizeof(int32_t), content_hash(w, static_cast<size_t>(K * N)));
  const std::string key = key_of("q8", int(type), K, N, int(b_is_nk), int64_t(group), zp_values, hash);
  return packed_weights_registry().find_or_pack(
      key,
      [&](const PackedWeights& p) {
        return p.group == group && packs_to(p, w, type, K, N, b_is_nk, zero_points, zero_point_count);
      },
      pack);
}

std::shared_ptr<const PackedNBits> shared_pack_nbits(const NBitsWeights& w, bool share, std::string& error) {
  const auto pack = [&] {
    PackedNBits p;
    error = pack_nbits_weights(w, p);
    return p;
  };
  if (!share) {
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
  std::shared_ptr<const PackedNBits> packed =
      packed_nbits_registry().find_or_pack(key, [&](const PackedNBits& p) { return packs_to(p, w); }, pack);
  return error.empty() ? packed : nullptr;
}

}  // namespace onebit
