// SPDX-License-Identifier: Apache-2.0
// A timing model of one device call on an AMD XDNA NPU, so that device times mean something on a
// machine without one (the emu backend's own times are an interpreter's). Per call:
//
//   modelled = 2 × sync_call_us + (A bytes + C bytes) / sync_gbps          host <-> device syncs
//            + launches × launch_us                                        host -> XRT -> array
//            + Σ per launch max(ops / int8_tops, DRAM bytes / dram_gbps)   the array's roofline
//
// where a launch of block m_block computes ops = 2 × m_block × K' × N' (K', N' padded up to the
// design's tiles: padding is computed too) and moves DRAM bytes = K' × N' (the packed weights,
// streamed again by every launch) + m_block × K (A) + m_block × N × 4 (C). Steady state only: the
// first call after idle (clocks and power gating) is far slower on hardware and is not modelled.
// Every modelled number is labelled "modelled" wherever it is shown.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"
#include "npu/block_plan.h"
#include "npu/design.h"

namespace onebit::npu {

struct CostModel {
  std::string generation;   // "xdna1", "xdna2", or the name a cost file gives
  double launch_us = 0;     // one launch, from the host call through XRT until its completion is seen
  double sync_call_us = 0;  // one BO sync (ioctl + cache maintenance), whatever its size
  double sync_gbps = 0;     // bytes a sync moves per second, in GB/s (1e9 bytes)
  double dram_gbps = 0;     // the array's DRAM traffic, in GB/s
  double int8_tops = 0;     // sustained int8 GEMM throughput of the whole array, in TOPS (1e12 ops, 2 per MAC)
};

// The keys of a cost file, in order: "generation" (a string) and the five numbers above.
constexpr const char* kCostModelKeys[] = {"generation", "launch_us", "sync_call_us",
                                          "sync_gbps",  "dram_gbps", "int8_tops"};

// The built-in generations by name (sources in cost_model.cpp). With the cost-file rule below,
// what option cost_model, ep-probe --model and onebit-run --cost-model take; the Node package
// checks against these (bindings/constants.cpp).
constexpr const char* kCostModelGenerations[] = {"xdna1", "xdna2"};
// A cost model given by path is a cost file named *.json; anything else is a generation's name.
constexpr std::string_view kCostFileSuffix = ".json";
bool is_cost_file(std::string_view name_or_path);
// A built-in generation's name or a cost file's path: what load_cost_model may accept.
bool is_cost_model_reference(std::string_view name_or_path);

// The built-in generations; an unknown name is kInvalidArgument.
Result<CostModel> cost_model_for(const std::string& generation);
// A cost file's text: one JSON object with every key of kCostModelKeys and no other; a missing,
// unknown, mistyped or non-positive key is kInvalidArgument naming the key and `where`.
Result<CostModel> cost_model_from_json(const std::string& text, const std::string& where);
// "xdna1" / "xdna2", or the path of a cost file (kIo when it cannot be read).
Result<CostModel> load_cost_model(const std::string& name_or_path);

// What one call did on the device, as far as the model needs it.
struct DeviceWork {
  uint32_t K = 0, N = 0;
  Tiling tiling;                          // the design's (for padding)
  std::span<const BlockLaunch> launches;  // one per launch, with its m_block
  uint64_t a_bytes = 0;                   // synced to the device
  uint64_t c_bytes = 0;                   // synced back
};

// The modelled time of one call, in microseconds, by part.
struct ModelledCall {
  double sync_us = 0;    // A to the device and C back
  double launch_us = 0;  // launch overhead of every launch
  double array_us = 0;   // compute or DRAM traffic on the array, the larger per launch
  double total_us() const { return sync_us + launch_us + array_us; }
};

ModelledCall model_call(const CostModel& model, const DeviceWork& work);

// What a launch costs on this model in rows of array time, for plan_blocks: its overhead plus
// the part of the array's time every launch pays (the weights streamed again), over the array's
// time per row. Planning with the emulator's default (8) would split 12 rows into three m4
// launches where XDNA pays ~50 µs and the whole weights for each.
uint32_t launch_cost_rows(const CostModel& model, uint32_t K, uint32_t N, std::span<const uint32_t> block_sizes);

// The modelled time of `rows` rows on (K, N) as DeviceGemm runs them with this model: blocks
// planned over `block_sizes` with launch_cost_rows(), the tiling its designs use, A synced as
// rows × K bytes, C narrowed to rows × N × 4.
ModelledCall model_rows(const CostModel& model, uint32_t K, uint32_t N, uint32_t rows,
                        std::span<const uint32_t> block_sizes);

}  // namespace onebit::npu
