// SPDX-License-Identifier: Apache-2.0
#include "npu/design_check.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <tuple>

#include "npu/weight_layout.h"

namespace onebit::npu {

namespace {

// Designs that passed in this process: (target, K, N, m_block, program checksum).
using Checked = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint64_t>;

Checked identity(const DesignInfo& info) {
  return {static_cast<uint32_t>(info.target), info.K, info.N, info.m_block, info.program_checksum};
}

std::mutex checked_mutex;
std::set<Checked>& checked() {
  static std::set<Checked> designs;
  return designs;
}

bool already_checked(const DesignInfo& info) {
  std::lock_guard lock(checked_mutex);
  return checked().contains(identity(info));
}

void remember_checked(const DesignInfo& info) {
  std::lock_guard lock(checked_mutex);
  checked().insert(identity(info));
}

// Full-range int8 values from a fixed linear congruential sequence.
std::vector<int8_t> seeded_int8(size_t count, uint32_t seed) {
  std::vector<int8_t> values(count);
  for (auto& v : values) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<int8_t>(seed >> 24);
  }
  return values;
}

// The check input and its reference C, for `rows` rows of A (a design of m_block rows uses the
// first m_block of them).
struct CheckInput {
  uint32_t rows = 0, K = 0, N = 0;
  std::vector<int8_t> a, w;  // rows × K, K × N
  std::vector<int32_t> c;    // rows × N; int32 holds it (K <= kMaxK)
  std::unique_ptr<BufferObject> w_bo;
};

Status prepare_input(Device& device, const DesignInfo& info, uint32_t rows, CheckInput& in) {
  in.rows = rows;
  in.K = info.K;
  in.N = info.N;
  in.a = seeded_int8(size_t(rows) * in.K, 0x5eed);
  in.w = seeded_int8(size_t(in.K) * in.N, 0xb17);
  in.c.assign(size_t(rows) * in.N, 0);
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t k = 0; k < in.K; ++k) {
      const int32_t a = in.a[size_t(m) * in.K + k];
      const int8_t* w_row = in.w.data() + size_t(k) * in.N;
      int32_t* c_row = in.c.data() + size_t(m) * in.N;
      for (uint32_t n = 0; n < in.N; ++n) c_row[n] += a * w_row[n];
    }
  const std::vector<int8_t> packed = pack_weights_tiled(in.w.data(), WeightLayout::kKN, in.K, in.N, info.tiling);
  Result<std::unique_ptr<BufferObject>> bo = device.alloc_bo(packed.size());
  if (!bo) return bo.status();
  in.w_bo = std::move(bo).value();
  std::memcpy(in.w_bo->host(), packed.data(), packed.size());
  return device.sync(*in.w_bo, SyncDirection::kToDevice, 0, packed.size());
}

Status check_one(Device& device, const DesignInfo& info, const LoadedDesign& loaded, const CheckInput& in,
                 std::chrono::milliseconds timeout) {
  const size_t a_bytes = size_t(info.m_block) * in.K, c_bytes = size_t(info.m_block) * in.N * 4;
  Result<std::unique_ptr<BufferObject>> a_bo = device.alloc_bo(a_bytes);
  if (!a_bo) return a_bo.status();
  Result<std::unique_ptr<BufferObject>> c_bo = device.alloc_bo(c_bytes);
  if (!c_bo) return c_bo.status();
  std::memcpy((*a_bo)->host(), in.a.data(), a_bytes);
  if (Status s = device.sync(**a_bo, SyncDirection::kToDevice, 0, a_bytes); !s) return s;
  LaunchArgs args;
  args.design = &loaded;
  args.a = a_bo->get();
  args.w = in.w_bo.get();
  args.c = c_bo->get();
  Result<RunHandle> run = device.launch(args);
  if (!run) return run.status();
  if (Status s = device.wait(*run, timeout); !s) {
    device.cancel(*run);
    return s;
  }
  if (Status s = device.sync(**c_bo, SyncDirection::kFromDevice, 0, c_bytes); !s) return s;
  std::vector<int32_t> c(size_t(info.m_block) * in.N);
  std::memcpy(c.data(), (*c_bo)->host(), c_bytes);
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] != in.c[i])
      return make_error(ErrorCode::kDesign,
                        "design " + info.key().to_string() + " computes C[" + std::to_string(i / in.N) + "][" +
                            std::to_string(i % in.N) + "] = " + std::to_string(c[i]) +
                            " on the check input, the reference gives " + std::to_string(in.c[i]) + "; rejected");
  return {};
}

}  // namespace

Status check_designs_compute(Device& device, const std::vector<Design>& designs,
                             const std::vector<std::shared_ptr<LoadedDesign>>& loaded,
                             std::chrono::milliseconds timeout) {
  uint32_t rows = 0;
  for (const Design& d : designs)
    if (!already_checked(d.info)) rows = std::max(rows, d.info.m_block);
  if (rows == 0) return {};
  CheckInput in;
  if (Status s = prepare_input(device, designs.front().info, rows, in); !s)
    return make_error(ErrorCode::kDesign, "cannot prepare the design check: " + s.reason());
  for (size_t i = 0; i < designs.size(); ++i) {
    const DesignInfo& info = designs[i].info;
    if (already_checked(info)) continue;
    Status s = check_one(device, info, *loaded[i], in, timeout);
    if (!s) {
      if (s.code() == ErrorCode::kDesign) return s;
      return make_error(ErrorCode::kDesign,
                        "design " + info.key().to_string() + ": its check run failed: " + s.reason());
    }
    remember_checked(info);
  }
  return {};
}

}  // namespace onebit::npu
