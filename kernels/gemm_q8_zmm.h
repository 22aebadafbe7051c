// SPDX-License-Identifier: Apache-2.0
// The VNNI kernel's register operations on zmm (16 int32 or float lanes: one block of columns per
// register), for gemm_q8_vnni.h. Include only inside a `#pragma GCC target` region with AVX-512
// VNNI, after gemm_q8_vnni.h (each including file gets its own copy, as that header says).
#pragma once
#include <immintrin.h>

#include <cstring>

namespace onebit {

namespace {

struct Zmm {
  using Reg = __m512i;
  static constexpr int kLanes = 16;
  static Reg zero() { return _mm512_setzero_si512(); }
  static Reg load(const int8_t* p) { return _mm512_loadu_si512(p); }
  static Reg broadcast(const uint8_t* p) {
    int32_t quad;
    std::memcpy(&quad, p, sizeof(quad));
    return _mm512_set1_epi32(quad);
  }
  // Written out because GCC 12 copies the accumulator twice around every _mm512_dpbusd_epi32
  // (seen in the disassembly: two vmovdqa per vpdpbusd, and spills in the larger tiles).
  static Reg dpbusd(Reg acc, Reg x, Reg w) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "vm"(w));
    return acc;
  }
  static Reg add(Reg a, Reg b) { return _mm512_add_epi32(a, b); }
  static void store(int32_t* p, Reg v) { _mm512_storeu_si512(p, v); }
  static Reg load32(const int32_t* p) { return _mm512_loadu_si512(p); }
  static Reg set1(int32_t v) { return _mm512_set1_epi32(v); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_epi32(a, b); }
  static Reg mullo(Reg a, Reg b) { return _mm512_mullo_epi32(a, b); }
  using FReg = __m512;
  static FReg to_float(Reg v) { return _mm512_cvtepi32_ps(v); }
  static FReg fload(const float* p) { return _mm512_loadu_ps(p); }
  static FReg fset1(float v) { return _mm512_set1_ps(v); }
  static FReg fmul(FReg a, FReg b) { return _mm512_mul_ps(a, b); }
  static FReg fadd(FReg a, FReg b) { return _mm512_add_ps(a, b); }
  static void fstore(float* p, FReg v) { _mm512_storeu_ps(p, v); }
  static void fstream(float* p, FReg v) { _mm512_stream_ps(p, v); }  // p 64-byte aligned
};

}  // namespace

}  // namespace onebit
