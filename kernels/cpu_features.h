// SPDX-License-Identifier: Apache-2.0
// What the host kernels may use on this CPU: CPUID says what the core implements, XGETBV says
// which register states the OS saves across context switches (a core with AVX-512 under an OS
// that does not save zmm state must not run zmm code).
#pragma once

namespace onebit {

struct CpuFeatures {
  bool avx2 = false;         // AVX2 with the ymm state enabled by the OS
  bool avx_vnni = false;     // VEX-encoded vpdpbusd on ymm (AVX-VNNI), ymm state enabled
  bool avx512 = false;       // AVX-512 F, BW and VL, with the zmm and mask states enabled
  bool avx512_vnni = false;  // the same and AVX-512 VNNI
  bool amx_int8 = false;     // AVX-512 VNNI and AMX tiles with int8 dot products, tile state enabled
                             // by the OS and granted to this process (Linux asks for it per process)
};

// Read once per process.
const CpuFeatures& cpu_features();

}  // namespace onebit
