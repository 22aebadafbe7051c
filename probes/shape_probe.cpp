// SPDX-License-Identifier: Apache-2.0
#include "probes/shape_probe.h"

#include <algorithm>
#include <memory>

#include "kernels/gemm_q8_kernels.h"
#include "npu/device_select.h"
#include "probes/device_path.h"
#include "probes/host_path.h"
#include "probes/probe_operands.h"

namespace onebit::probes {

namespace {

// The device's raw dot products, with zero points folded in as the EP does (all zero points are
// 0 here), must equal the host's accumulators; and so the outputs of the shared epilogue.
bool same_result(const HostPath& host, const DevicePath& device, uint32_t rows, uint32_t N, uint32_t K) {
  const PreparedActivation& x = host.activation();
  const PackedWeights& w = host.weights();
  for (uint32_t m = 0; m < rows; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      const size_t i = size_t(m) * N + n;
      const int32_t folded = fold_zero_points(device.dots()[i], 0, x.row_sum[m], 0, w.col_sum[n], K);
      if (folded != host.acc()[i]) return false;
    }
  return std::equal(host.output().begin(), host.output().begin() + ptrdiff_t(size_t(rows) * N),
                    device.output().begin());
}

}  // namespace

ProbeResult run_probe(const ProbeOptions& options) {
  validate(options);
  ProbeResult result;
  result.K = options.K;
  result.N = options.N;
  result.repeat = options.repeat;
  result.seed = options.seed;
  result.host_kernel = selected_kernel_name();
  result.device.requested = options.device;

  const uint32_t max_rows = *std::max_element(options.rows.begin(), options.rows.end());
  const ProbeOperands ops = make_operands(options.K, options.N, max_rows, options.seed);
  HostPath host(ops);

  std::unique_ptr<DevicePath> device;
  npu::Result<npu::DeviceChoice> choice = npu::select_device(options.device);
  if (!choice) {
    // ONEBIT_DEVICE holds something invalid (the option itself was validated).
    result.device.selected = "none";
    result.device.error = choice.error().to_string();
  } else {
    result.device.selected = npu::device_kind_name(choice->kind);
    result.device.reason = choice->reason;
    if (choice->kind != npu::DeviceKind::kNone) {
      device = std::make_unique<DevicePath>(ops, choice->kind, options.designs_dir, options.lock_path);
      result.device.name = device->name();
      result.device.emulated = device->emulated();
      result.device.designs_dir = device->designs_dir();
      result.device.setup_ms = device->setup_ms();
      if (device->ok()) {
        result.device.designs_built = device->setup().designs_built;
        result.device.designs_loaded = device->setup().designs_loaded;
        result.device.weight_bytes = device->setup().weight_bytes;
      } else {
        result.device.error = device->error();
        device.reset();
      }
    }
  }

  for (uint32_t rows : options.rows) {
    RowsResult r;
    r.rows = rows;
    std::vector<double> host_ms, total, upload, launch_wait, c_sync, epilogue;
    DeviceCallTiming timing;
    bool exact = true;
    host.call(rows);  // warm-up
    if (device && !device->call(rows, timing)) {
      result.device.error = device->error();
      device.reset();
    }
    for (uint32_t i = 0; i < options.repeat; ++i) {
      host_ms.push_back(host.call(rows));
      if (!device) continue;
      if (!device->call(rows, timing)) {
        result.device.error = device->error();
        device.reset();
        continue;
      }
      exact = exact && same_result(host, *device, rows, options.N, options.K);
      total.push_back(timing.total_ms);
      upload.push_back(timing.upload_ms);
      launch_wait.push_back(timing.launch_wait_ms);
      c_sync.push_back(timing.c_sync_ms);
      epilogue.push_back(timing.epilogue_ms);
    }
    r.host = spread_of(host_ms);
    if (device) {
      DeviceRowsResult d;
      d.total = spread_of(total);
      d.upload = spread_of(upload);
      d.launch_wait = spread_of(launch_wait);
      d.c_sync = spread_of(c_sync);
      d.epilogue = spread_of(epilogue);
      d.launches = timing.stats.launches;
      d.padded_rows = timing.stats.padded_rows;
      d.a_bytes = timing.stats.a_bytes_synced;
      d.c_bytes = timing.stats.c_bytes_synced;
      d.c_whole = timing.stats.c_whole;
      r.ratio = d.total.median_ms > 0 ? r.host.median_ms / d.total.median_ms : 0.0;
      r.device = d;
      r.exact = exact;
    }
    result.rows.push_back(r);
  }
  return result;
}

}  // namespace onebit::probes
