// SPDX-License-Identifier: Apache-2.0
// MatMulNBits' B, scales and zero points -> the tiles the W4A8 kernels stream (gemm_w4a8.h).
// Runs once per weight at compile time; 4-bit weights stay 4-bit.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/gemm_w4a8.h"

namespace onebit {

namespace {

int64_t zero_point_bytes_per_column(int64_t k_blocks, int64_t bits) { return (k_blocks * bits + 7) / 8; }

std::string shape_error(const NBitsWeights& w) {
  const auto at = [](const char* what, int64_t got, int64_t want) {
    return std::string("MatMulNBits ") + what + ": " + std::to_string(got) + " values, expected " +
           std::to_string(want);
  };
  if (w.bits != 4 && w.bits != 8) return "MatMulNBits bits=" + std::to_string(w.bits) + ": only 4 and 8 are supported";
  if (w.block_size < 16 || w.block_size > 256 || (w.block_size & (w.block_size - 1)) != 0)
    return "MatMulNBits block_size=" + std::to_string(w.block_size) + ": must be a power of two in [16, 256]";
  if (w.K <= 0 || w.N <= 0)
    return "MatMulNBits K=" + std::to_string(w.K) + " N=" + std::to_string(w.N) + ": both must be positive";
  const int64_t k_blocks = (w.K + w.block_size - 1) / w.block_size;
  if (w.b == nullptr || w.b_bytes != w.N * k_blocks * w.block_size * w.bits / 8)
    return at("B (uint8 bytes)", w.b == nullptr ? 0 : w.b_bytes, w.N * k_blocks * w.block_size * w.bits / 8);
  if (w.scales == nullptr || w.scale_count != w.N * k_blocks)
    return at("scales", w.scales == nullptr ? 0 : w.scale_count, w.N * k_blocks);
  if (w.zero_points != nullptr && w.zero_point_bytes != w.N * zero_point_bytes_per_column(k_blocks, w.bits))
    return at("zero_points (uint8 bytes)", w.zero_point_bytes, w.N * zero_point_bytes_per_column(k_blocks, w.bits));
  return {};
}

// Model values: the unsigned weight of column n at k, and of block b the zero point.
int32_t model_weight(const NBitsWeights& w, int64_t k_blocks, int64_t n, int64_t k) {
  const uint8_t* column = w.b + n * k_blocks * w.block_size * w.bits / 8;
  if (w.bits == 8) return column[k];
  return (column[k / 2] >> (4 * (k % 2))) & 0xF;
}

int32_t model_zero_point(const NBitsWeights& w, int64_t k_blocks, int64_t n, int64_t b) {
  if (w.zero_points == nullptr) return 1 << (w.bits - 1);
  const uint8_t* column = w.zero_points + n * zero_point_bytes_per_column(k_blocks, w.bits);
  if (w.bits == 8) return column[b];
  return (column[b / 2] >> (4 * (b % 2))) & 0xF;
}

// Where w[k][c] of a tile's k-block goes inside its weight bytes (k counted in the block), and
// the nibble (0 low, 4 high; 0 for 8 bits).
struct Slot {
  int64_t byte;
  int shift;
};

Slot slot(int64_t bits, int64_t k, int64_t c) {
  if (bits == 8) return {(k / 4) * 32 + 4 * c + k % 4, 0};
  return {(k / 8) * 32 + 4 * c + k % 4, int((k % 8) / 4) * 4};
}

// The weights k0..k0+7 of one column (k0 a multiple of 8, all < K), as the tile stores them: 4-bit
// weights come in the model's bytes low nibble first (k, k+1 in one byte) and go to 4 bytes holding
// k0..k0+3 in their low nibbles and k0+4..k0+7 in their high ones; 8-bit weights go as they are,
// two runs of 4 bytes 32 bytes apart.
void pack_octet(const uint8_t* column, int64_t bits, int64_t k0, uint8_t* out) {
  if (bits == 8) {
    std::memcpy(out, column + k0, 4);
    std::memcpy(out + 32, column + k0 + 4, 4);
    return;
  }
  const uint8_t* s = column + k0 / 2;
  out[0] = uint8_t((s[0] & 0x0F) | (s[2] << 4));
  out[1] = uint8_t((s[0] >> 4) | (s[2] & 0xF0));
  out[2] = uint8_t((s[1] & 0x0F) | (s[3] << 4));
  out[3] = uint8_t((s[1] >> 4) | (s[3] & 0xF0));
}

// Tile t of w as the kernels stream it, into out (p.tile_stride() bytes; p holds w's geometry):
// per k-block the weights, then the 8 columns' scales, then their zero points. Weights past K
// stay 0: their activations are 0, so they add nothing whatever ORT's padding holds.
void pack_tile(const NBitsWeights& w, const PackedNBits& p, int64_t t, uint8_t* out) {
  const int64_t k_blocks = p.k_blocks(), column_bytes = k_blocks * w.block_size * w.bits / 8;
  std::memset(out, 0, static_cast<size_t>(p.tile_stride()));
  for (int64_t c = 0; c < kW4A8TileN && t * kW4A8TileN + c < w.N; ++c) {
    const int64_t n = t * kW4A8TileN + c;
    const uint8_t* column = w.b + n * column_bytes;
    for (int64_t b = 0; b < k_blocks; ++b) {
      uint8_t* block = out + b * p.block_stride();
      const int64_t k_begin = b * w.block_size, k_end = std::min(w.K, k_begin + w.block_size);
      int64_t k = k_begin;
      for (; k + 8 <= k_end; k += 8) {
        const Slot s = slot(w.bits, k - k_begin, c);
        pack_octet(column, w.bits, k, block + s.byte);
      }
      for (; k < k_end; ++k) {  // the tail of a last block that K does not fill
        const Slot s = slot(w.bits, k - k_begin, c);
        block[s.byte] = static_cast<uint8_t>(block[s.byte] | (model_weight(w, k_blocks, n, k) << s.shift));
      }
      std::memcpy(block + p.weight_bytes() + c * int64_t(sizeof(float)), &w.scales[n * k_blocks + b], sizeof(float));
      if (p.has_zero_points)
        block[p.weight_bytes() + kW4A8TileN * int64_t(sizeof(float)) + c] =
            static_cast<uint8_t>(model_zero_point(w, k_blocks, n, b));
    }
  }
}

}  // namespace

std::string packed_nbits_geometry(const NBitsWeights& w, PackedNBits& out) {
  if (std::string error = shape_error(w); !error.empty()) return error;
  out.K = w.K;
  out.N = w.N;
  out.bits = w.bits;
  out.block_size = w.block_size;
  out.has_zero_points = w.zero_points != nullptr;
  return {};
}

std::string pack_nbits_weights(const NBitsWeights& w, PackedNBits& out) {
  PackedNBits p;
  if (std::string error = packed_nbits_geometry(w, p); !error.empty()) return error;
  PackedBytes<uint8_t>::Owned data(static_cast<size_t>(p.tiles() * p.tile_stride()));
  for (int64_t t = 0; t < p.tiles(); ++t) pack_tile(w, p, t, data.data() + t * p.tile_stride());
  p.data = PackedBytes<uint8_t>(std::move(data));
  out = std::move(p);
  return {};
}

bool packs_to(const PackedNBits& p, const NBitsWeights& w) {
  PackedNBits geometry;
  if (!packed_nbits_geometry(w, geometry).empty()) return false;
  if (p.K != geometry.K || p.N != geometry.N || p.bits != geometry.bits || p.block_size != geometry.block_size ||
      p.has_zero_points != geometry.has_zero_points ||
      p.data.size() != static_cast<size_t>(p.tiles() * p.tile_stride()))
    return false;
  // Each tile packed again into scratch and compared whole, padding included (packing writes zeros
  // there): one tile at a time stays in L1.
  std::vector<uint8_t> tile(static_cast<size_t>(p.tile_stride()));
  const uint8_t* data = p.data.data();  // once: data() picks the owned or the mapped bytes
  for (int64_t t = 0; t < p.tiles(); ++t) {
    pack_tile(w, p, t, tile.data());
    if (std::memcmp(tile.data(), data + t * p.tile_stride(), tile.size()) != 0) return false;
  }
  return true;
}

int32_t PackedNBits::weight(int64_t k, int64_t n) const {
  const int64_t b = k / block_size;
  const Slot s = slot(bits, k - b * block_size, n % kW4A8TileN);
  const uint8_t byte = data[static_cast<size_t>((n / kW4A8TileN) * tile_stride() + b * block_stride() + s.byte)];
  return bits == 8 ? byte : (byte >> s.shift) & 0xF;
}

float PackedNBits::scale(int64_t b, int64_t n) const {
  float s;
  std::memcpy(&s,
              &data[static_cast<size_t>((n / kW4A8TileN) * tile_stride() + b * block_stride() + weight_bytes() +
                                        (n % kW4A8TileN) * int64_t(sizeof(float)))],
              sizeof(float));
  return s;
}

int32_t PackedNBits::zero_point(int64_t b, int64_t n) const {
  if (!has_zero_points) return 1 << (bits - 1);
  return data[static_cast<size_t>((n / kW4A8TileN) * tile_stride() + b * block_stride() + weight_bytes() +
                                  kW4A8TileN * int64_t(sizeof(float)) + n % kW4A8TileN)];
}

}  // namespace onebit
