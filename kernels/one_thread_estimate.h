// SPDX-License-Identifier: Apache-2.0
// What the kernels' estimates of a call's one-thread time assume (w4a8_one_thread_ns,
// attention_one_thread_ns; engine/intra_op_threads.h's split rule reads them).
#pragma once

namespace onebit {

// Bytes one core streams from memory a ns: the AVX-512 VNNI W4A8 kernel's 10–12 GB/s at one row
// (Xeon, BENCHMARKS.md); the attention reads its cache about as fast.
constexpr double kOneCoreReadBytesPerNs = 12.0;

}  // namespace onebit
