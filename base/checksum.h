// SPDX-License-Identifier: Apache-2.0
// FNV-1a 64: the design program checksum and the ONEBIT_NPU_DBG whole-C-sync checksum. Not
// cryptographic; it catches corruption, not tampering.
#pragma once
#include <cstddef>
#include <cstdint>

namespace onebit::npu {

constexpr uint64_t kFnv1a64Seed = 0xcbf29ce484222325ULL;

uint64_t fnv1a64(const void* data, size_t bytes, uint64_t seed = kFnv1a64Seed);

}  // namespace onebit::npu
