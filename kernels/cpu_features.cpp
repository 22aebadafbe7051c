// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace onebit {

namespace {

// XCR0 bits: SSE and AVX (ymm upper halves); AVX-512 opmask, zmm upper halves, zmm16-31.
constexpr uint64_t kYmmState = (1u << 1) | (1u << 2);
constexpr uint64_t kZmmState = kYmmState | (1u << 5) | (1u << 6) | (1u << 7);
// XCR0 bits of the AMX tile configuration and tile data; the second is also the feature number
// Linux's arch_prctl(ARCH_REQ_XCOMP_PERM) grants a process.
constexpr uint64_t kTileState = (uint64_t{1} << 17) | (uint64_t{1} << 18);
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureTileData = 18;
// CPUID.(7,0).EDX: AMX-TILE and AMX-INT8.
constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;

// Linux gives a process the AMX tile state only after it asks (the state is 8 KiB a thread).
bool tile_state_granted() { return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) == 0; }

struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
  return r;
}

// XGETBV(0) by its encoding, so no function needs the xsave target.
uint64_t os_enabled_state() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  const Regs leaf1 = cpuid(1, 0);
  if (!(leaf1.ecx & bit_OSXSAVE) || !(leaf1.ecx & bit_AVX)) return f;
  const uint64_t state = os_enabled_state();
  const bool ymm = (state & kYmmState) == kYmmState;
  const bool zmm = (state & kZmmState) == kZmmState;
  const Regs leaf7 = cpuid(7, 0), leaf7_1 = cpuid(7, 1);
  f.avx2 = ymm && (leaf7.ebx & bit_AVX2);
  f.avx_vnni = f.avx2 && (leaf7_1.eax & bit_AVXVNNI);
  const unsigned avx512 = bit_AVX512F | bit_AVX512BW | bit_AVX512VL;
  f.avx512 = f.avx2 && zmm && (leaf7.ebx & avx512) == avx512;
  f.avx512_vnni = f.avx512 && (leaf7.ecx & bit_AVX512VNNI);
  f.amx_int8 = f.avx512_vnni && (leaf7.edx & (kAmxTile | kAmxInt8)) == (kAmxTile | kAmxInt8) &&
               (state & kTileState) == kTileState && tile_state_granted();
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace onebit
