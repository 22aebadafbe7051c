// SPDX-License-Identifier: Apache-2.0
#include "npu/emu/emu_interpreter.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace onebit::npu {

namespace {

Error fault(const std::string& why) { return make_error(ErrorCode::kLaunch, "device fault: " + why); }

// acc[m][j] += sum_i a[m][i] * w[j][i] over one k_tile (both tiles zero padded past K).
void mac_tile(const int8_t* a, const int8_t* w, int32_t* acc, uint32_t m_block, uint32_t n_tile, uint32_t k_tile) {
  for (uint32_t m = 0; m < m_block; ++m) {
    const int8_t* a_row = a + size_t(m) * k_tile;
    int32_t* acc_row = acc + size_t(m) * n_tile;
    for (uint32_t j = 0; j < n_tile; ++j) {
      const int8_t* w_row = w + size_t(j) * k_tile;
      int32_t sum = 0;
      for (uint32_t i = 0; i < k_tile; ++i) sum += int32_t(a_row[i]) * int32_t(w_row[i]);
      acc_row[j] += sum;
    }
  }
}

}  // namespace

Status execute_program(const std::vector<Instruction>& program, const DesignInfo& info, const EmuLaunchMemory& mem,
                       const std::atomic<bool>& cancel) {
  const uint32_t mb = info.m_block, K = info.K, N = info.N;
  const uint32_t kt_size = info.tiling.k_tile, nt_size = info.tiling.n_tile;
  const size_t tile_w_bytes = size_t(nt_size) * kt_size;
  if (mem.a_bytes < size_t(mb) * K) return fault("A view is smaller than m_block × K");
  if (mem.c_bytes < size_t(mb) * N * 4) return fault("C view is smaller than m_block × N × 4");
  if (mem.w_bytes < size_t(info.n_tiles) * info.k_tiles * tile_w_bytes)
    return fault("W view is smaller than the packed weights");

  // The tile's local memories.
  std::vector<int8_t> a_tile(size_t(mb) * kt_size);
  std::vector<int8_t> w_tile(tile_w_bytes);
  std::vector<int32_t> acc(size_t(mb) * nt_size, 0);

  std::array<uint32_t, kLoopRegisters> reg{};
  struct Frame {
    size_t body;  // index of the first instruction of the loop body
    uint8_t r;
    uint32_t count;
  };
  std::vector<Frame> loops;

  for (size_t pc = 0; pc < program.size();) {
    const Instruction& in = program[pc];
    switch (in.op) {
      case Opcode::kLoop:
        reg[in.r0] = 0;
        loops.push_back({pc + 1, in.r0, in.imm});
        ++pc;
        break;
      case Opcode::kEndLoop: {
        if (loops.empty()) return fault("END_LOOP without LOOP");
        Frame& f = loops.back();
        if (++reg[f.r] < f.count) {
          pc = f.body;
        } else {
          loops.pop_back();
          ++pc;
        }
        break;
      }
      case Opcode::kZeroAcc:
        std::fill(acc.begin(), acc.end(), 0);
        ++pc;
        break;
      case Opcode::kLoadA: {
        const uint32_t kt = reg[in.r0];
        if (kt >= info.k_tiles) return fault("LOAD_A tile " + std::to_string(kt) + " out of range");
        const uint32_t k0 = kt * kt_size, width = std::min(kt_size, K - k0);
        for (uint32_t m = 0; m < mb; ++m) {
          int8_t* dst = a_tile.data() + size_t(m) * kt_size;
          std::memcpy(dst, mem.a + size_t(m) * K + k0, width);
          std::memset(dst + width, 0, kt_size - width);
        }
        ++pc;
        break;
      }
      case Opcode::kLoadW: {
        const uint32_t nt = reg[in.r0], kt = reg[in.r1];
        if (nt >= info.n_tiles || kt >= info.k_tiles) return fault("LOAD_W tile out of range");
        std::memcpy(w_tile.data(), mem.w + (size_t(nt) * info.k_tiles + kt) * tile_w_bytes, tile_w_bytes);
        ++pc;
        break;
      }
      case Opcode::kMac:
        if (cancel.load(std::memory_order_relaxed)) return make_error(ErrorCode::kTimeout, "run cancelled");
        mac_tile(a_tile.data(), w_tile.data(), acc.data(), mb, nt_size, kt_size);
        ++pc;
        break;
      case Opcode::kStoreC: {
        const uint32_t nt = reg[in.r0];
        if (nt >= info.n_tiles) return fault("STORE_C tile " + std::to_string(nt) + " out of range");
        const uint32_t n0 = nt * nt_size, width = std::min(nt_size, N - n0);
        for (uint32_t m = 0; m < mb; ++m)
          std::memcpy(mem.c + (size_t(m) * N + n0) * 4, acc.data() + size_t(m) * nt_size, size_t(width) * 4);
        ++pc;
        break;
      }
      case Opcode::kHalt:
        return {};
    }
  }
  return fault("program ran past its end without HALT");
}

}  // namespace onebit::npu
