// SPDX-License-Identifier: Apache-2.0
#include "npu/cost_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "base/json_object.h"
#include "base/regular_file.h"
#include "base/utf8.h"
#include "npu/emu/design_builder.h"

namespace onebit::npu {

namespace {

// XDNA (Phoenix / Hawk Point, 4 × 5 = 20 compute tiles).
//  launch_us 50: an empty kernel launch from the host through XRT costs about 45–60 µs (figure
//    calibrated in issue #14 from public XRT measurements on Phoenix, launch + wait, steady state).
//  int8_tops 6.76: best end-to-end int8 GEMM measured on XDNA in "Striking the Balance: GEMM
//    Performance Optimization Across Generations of Ryzen AI NPUs" (Taka et al., arXiv 2512.13282,
//    2025; large GEMMs, IRON designs, whole array). Small blocks reach less: the DRAM term bounds them.
//  dram_gbps 51.2: assumption, not a published NPU figure: half of a 128-bit LPDDR5-6400
//    platform's 102.4 GB/s peak, for what the array's shim DMAs sustain.
//  sync_call_us 10, sync_gbps 20: assumption: a BO sync is an ioctl plus a cache flush or
//    invalidate of the range; no published per-sync figure for XDNA was found. Override them.
CostModel xdna1() { return {"xdna1", 50.0, 10.0, 20.0, 51.2, 6.76}; }

// XDNA2 (Strix, 4 × 8 = 32 compute tiles).
//  launch_us 45: the low end of the same 45–60 µs range: dispatch overhead falls as columns are
//    added (issue #14); no separate published figure for Strix.
//  int8_tops 38.05: the same paper's best int8 GEMM on XDNA2.
//  dram_gbps 60: assumption: half of a 128-bit LPDDR5X-7500 platform's 120 GB/s peak.
//  sync_call_us 10, sync_gbps 20: as XDNA (same driver path; assumption).
CostModel xdna2() { return {"xdna2", 45.0, 10.0, 20.0, 60.0, 38.05}; }

// Bounds of the constants: a microsecond to a second per launch or sync call, a kB/s to 100 TB/s
// or TOPS. Inside them every modelled time is finite.
constexpr double kMinCost = 1e-3;
constexpr double kMaxMicroseconds = 1e6;
constexpr double kMaxRate = 1e5;
// A cost file is a few hundred bytes; more is not one.
constexpr size_t kMaxCostFileBytes = 64 * 1024;

Error bad(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "cost model " + where + ": " + what);
}

std::string comma_list(std::span<const char* const> items) {
  std::string list;
  for (const char* item : items) list += (list.empty() ? "" : ", ") + std::string(item);
  return list;
}

std::string keys_text() { return comma_list(kCostModelKeys); }

}  // namespace

bool is_cost_file(std::string_view name_or_path) { return name_or_path.ends_with(kCostFileSuffix); }

bool is_cost_model_reference(std::string_view name_or_path) {
  return is_cost_file(name_or_path) || std::any_of(std::begin(kCostModelGenerations), std::end(kCostModelGenerations),
                                                   [&](const char* g) { return name_or_path == g; });
}

Result<CostModel> cost_model_for(const std::string& generation) {
  static_assert(std::size(kCostModelGenerations) == 2, "one model per built-in generation");
  if (generation == kCostModelGenerations[0]) return xdna1();
  if (generation == kCostModelGenerations[1]) return xdna2();
  return make_error(ErrorCode::kInvalidArgument, "unknown device generation '" + generation + "'; expected " +
                                                     comma_list(kCostModelGenerations) + " or a cost file (*" +
                                                     std::string(kCostFileSuffix) + ")");
}

Result<CostModel> cost_model_from_json(const std::string& text, const std::string& where) {
  Result<JsonObject> parsed = parse_json_object(text, where);
  if (!parsed) return parsed.error();
  const JsonObject& object = *parsed;
  for (const auto& [key, value] : object) {
    if (std::find_if(std::begin(kCostModelKeys), std::end(kCostModelKeys), [&](const char* k) { return key == k; }) ==
        std::end(kCostModelKeys))
      return bad(where, "unknown key " + json_string(key) + "; the keys are " + keys_text());
  }
  CostModel model;
  // Each constant within bounds no device comes near, so that the modelled time of any call (K, N
  // and rows below 2^32) stays a finite number: huge or tiny finite values made it inf.
  auto number = [&](const char* key, double lo, double hi, double& out) -> Status {
    const auto it = object.find(key);
    if (it == object.end())
      return bad(where, "missing key \"" + std::string(key) + "\" (every key is required: " + keys_text() + ")");
    const double* v = std::get_if<double>(&it->second);
    if (v == nullptr) return bad(where, "key \"" + std::string(key) + "\" must be a number");
    if (!(*v >= lo && *v <= hi)) {
      std::ostringstream range;
      range << "key \"" << key << "\" is " << std::setprecision(17) << *v << std::setprecision(6) << ", outside [" << lo
            << ", " << hi << "]";
      // JSON numbers nearer 0 than the smallest double underflow to 0 as they are read.
      if (*v == 0) range << " (a number below about 4.9e-324, such as 1e-400, underflows to 0)";
      return bad(where, range.str());
    }
    out = *v;
    return {};
  };
  const auto name = object.find("generation");
  if (name == object.end())
    return bad(where, "missing key \"generation\" (every key is required: " + keys_text() + ")");
  const std::string* generation = std::get_if<std::string>(&name->second);
  if (generation == nullptr || generation->empty()) return bad(where, "key \"generation\" must be a non-empty string");
  model.generation = *generation;
  for (Status s : {number("launch_us", kMinCost, kMaxMicroseconds, model.launch_us),
                   number("sync_call_us", kMinCost, kMaxMicroseconds, model.sync_call_us),
                   number("sync_gbps", kMinCost, kMaxRate, model.sync_gbps),
                   number("dram_gbps", kMinCost, kMaxRate, model.dram_gbps),
                   number("int8_tops", kMinCost, kMaxRate, model.int8_tops)})
    if (!s) return s.error();
  return model;
}

Result<CostModel> load_cost_model(const std::string& name_or_path) {
  if (!is_cost_file(name_or_path)) return cost_model_for(name_or_path);
  // Through the one reader of files the EP is pointed at: a FIFO, a device or a directory is an
  // error naming the path, never a hang or an endless read.
  Result<std::vector<uint8_t>> bytes = read_regular_file(name_or_path, kMaxCostFileBytes);
  if (!bytes) return make_error(ErrorCode::kIo, "cannot read cost file: " + bytes.error().reason);
  return cost_model_from_json(std::string(bytes->begin(), bytes->end()), name_or_path);
}

ModelledCall model_call(const CostModel& model, const DeviceWork& work) {
  ModelledCall t;
  if (work.launches.empty()) return t;  // rows == 0: DeviceGemm does nothing
  const double k_padded = double(tiles_for(work.K, work.tiling.k_tile)) * work.tiling.k_tile;
  const double n_padded = double(tiles_for(work.N, work.tiling.n_tile)) * work.tiling.n_tile;
  // GB/s = 1e3 bytes per µs; TOPS = 1e6 ops per µs.
  t.sync_us = 2 * model.sync_call_us + double(work.a_bytes + work.c_bytes) / (model.sync_gbps * 1e3);
  for (const BlockLaunch& launch : work.launches) {
    const double ops = 2.0 * launch.m_block * k_padded * n_padded;
    const double dram_bytes =
        k_padded * n_padded + double(launch.m_block) * work.K + double(launch.m_block) * work.N * 4;
    t.launch_us += model.launch_us;
    t.array_us += std::max(ops / (model.int8_tops * 1e6), dram_bytes / (model.dram_gbps * 1e3));
  }
  return t;
}

uint32_t launch_cost_rows(const CostModel& model, uint32_t K, uint32_t N, std::span<const uint32_t> block_sizes) {
  if (block_sizes.empty()) return kDefaultLaunchCostRows;
  const auto [smallest, largest] = std::minmax_element(block_sizes.begin(), block_sizes.end());
  auto array_us = [&](uint32_t m_block) {
    const BlockLaunch one[] = {{0, m_block, m_block}};
    return model_call(model, {K, N, choose_tiling(K, N), one, 0, 0}).array_us;
  };
  // A launch's array time is (nearly) linear in its rows: a part every launch pays (the weights
  // streamed again) and a part per row. The launch overhead joins the first.
  double per_row = array_us(*largest) / *largest;
  double fixed = model.launch_us;
  if (*largest > *smallest) {
    per_row = (array_us(*largest) - array_us(*smallest)) / (*largest - *smallest);
    fixed += array_us(*smallest) - per_row * *smallest;
  }
  if (!(per_row > 0)) return kDefaultLaunchCostRows;
  return static_cast<uint32_t>(std::min<double>(std::lround(fixed / per_row), 1u << 20));
}

ModelledCall model_rows(const CostModel& model, uint32_t K, uint32_t N, uint32_t rows,
                        std::span<const uint32_t> block_sizes) {
  const std::vector<BlockLaunch> plan = plan_blocks(rows, block_sizes, launch_cost_rows(model, K, N, block_sizes));
  return model_call(model, {K, N, choose_tiling(K, N), plan, uint64_t(rows) * K, uint64_t(rows) * N * 4});
}

}  // namespace onebit::npu
