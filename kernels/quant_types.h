// SPDX-License-Identifier: Apache-2.0
// Element types of the quantized operands the EP handles, independent of ORT.
#pragma once
#include <cstddef>
#include <cstdint>

namespace onebit {

enum class QType { Int8, Uint8 };

// uint8 values are stored shifted by -128 so one int8 kernel serves both signednesses:
// (x - zx) == ((x - 128) - (zx - 128)) exactly.
inline int32_t shift_for(QType t) { return t == QType::Uint8 ? 128 : 0; }

enum class OutputKind { Float32, Int8, Uint8, Int32 };

}  // namespace onebit
