// SPDX-License-Identifier: Apache-2.0
// Seeded random quantized operands, kept as raw int32 values (for the references) and encoded
// into the bytes the kernels read (int8 two's complement or uint8); a MatMulNBits weight's bytes
// and their view.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm_w4a8.h"
#include "kernels/quant_types.h"

namespace onebit_test {

struct QRange {
  int32_t lo;
  int32_t hi;
};

inline QRange range_of(onebit::QType t) { return t == onebit::QType::Uint8 ? QRange{0, 255} : QRange{-128, 127}; }

inline const char* name_of(onebit::QType t) { return t == onebit::QType::Uint8 ? "uint8" : "int8"; }

inline int32_t random_value(std::mt19937& rng, onebit::QType t) {
  const QRange r = range_of(t);
  return std::uniform_int_distribution<int32_t>(r.lo, r.hi)(rng);
}

inline std::vector<int32_t> random_values(std::mt19937& rng, size_t count, onebit::QType t) {
  std::vector<int32_t> v(count);
  for (auto& e : v) e = random_value(rng, t);
  return v;
}

// The bytes a model tensor of type t holding these values would contain.
inline std::vector<uint8_t> encode(const std::vector<int32_t>& values, onebit::QType t) {
  std::vector<uint8_t> bytes(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bytes[i] = t == onebit::QType::Uint8 ? static_cast<uint8_t>(values[i])
                                         : static_cast<uint8_t>(static_cast<int8_t>(values[i]));
  }
  return bytes;
}

// K×N row-major -> N×K row-major.
inline std::vector<int32_t> transpose(const std::vector<int32_t>& kn, int64_t K, int64_t N) {
  std::vector<int32_t> nk(kn.size());
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) nk[static_cast<size_t>(n * K + k)] = kn[static_cast<size_t>(k * N + n)];
  return nk;
}

// A positive scale as the EP builds one: a float32 value, widened to double.
inline double random_float_scale(std::mt19937& rng, float lo, float hi) {
  return double(std::uniform_real_distribution<float>(lo, hi)(rng));
}

// A MatMulNBits weight as a model stores it (the layout onebit::NBitsWeights describes), owning its
// bytes; view() is what the packer and the EP read.
struct NBitsModelWeights {
  int64_t K = 0, N = 0, bits = 4, block_size = 32;
  std::vector<uint8_t> b, zero_points;
  std::vector<float> scales;

  int64_t k_blocks() const { return (K + block_size - 1) / block_size; }
  // Without zero points the weight is symmetric (2^(bits-1)), whatever zero_points holds.
  onebit::NBitsWeights view(bool with_zero_points) const {
    return {K,
            N,
            bits,
            block_size,
            b.data(),
            int64_t(b.size()),
            scales.data(),
            int64_t(scales.size()),
            with_zero_points ? zero_points.data() : nullptr,
            with_zero_points ? int64_t(zero_points.size()) : 0};
  }
};

}  // namespace onebit_test
