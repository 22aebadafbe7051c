// SPDX-License-Identifier: Apache-2.0
// The emulated compute tile: executes a decoded design program (design_program.h) against device
// memory. Every memory access is bounds-checked against the launch's views, so a program or a
// launch that would leave its buffers faults (kLaunch) instead of touching other memory.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "npu/design.h"
#include "npu/emu/design_program.h"

namespace onebit::npu {

// Device memory one launch sees (already offset to the launch's first row).
struct EmuLaunchMemory {
  const int8_t* a = nullptr;  // m_block × K int8, row-major
  size_t a_bytes = 0;
  const int8_t* w = nullptr;  // packed tiled weights
  size_t w_bytes = 0;
  uint8_t* c = nullptr;  // m_block × N int32 (little-endian), row-major
  size_t c_bytes = 0;
};

// Runs the program to HALT. Checks `cancel` between tiles; a cancelled run stops with kTimeout.
Status execute_program(const std::vector<Instruction>& program, const DesignInfo& info, const EmuLaunchMemory& memory,
                       const std::atomic<bool>& cancel);

}  // namespace onebit::npu
