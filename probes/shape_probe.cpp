// SPDX-License-Identifier: Apache-2.0
#include "probes/shape_probe.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "engine/group_run.h"
#include "kernels/gemm_q8_kernels.h"
#include "npu/device_select.h"
#include "probes/probe_operands.h"

namespace onebit::probes {

namespace {

double ms(uint64_t ns) { return double(ns) / 1e6; }

// The probe's operands as the engine's group: int8 activations and weights, zero points 0,
// the operands' epilogue; weights packed once, outside any timing.
FusedGroup probe_group(const ProbeOperands& ops) {
  FusedGroup g;
  g.name = "probe " + std::to_string(ops.K) + "x" + std::to_string(ops.N);
  g.K = ops.K;
  g.N = ops.N;
  g.epilogue = ops.epilogue;
  g.weights.push_back(
      std::make_shared<const PackedWeights>(pack_weights(ops.w.data(), QType::Int8, ops.K, ops.N, false, nullptr, 0)));
  return g;
}

// One call of the first `rows` rows of the probe's activation through the engine's entry point,
// as the EP makes it, into y (each route has its own, for the exactness check).
CallResult probe_call(FusedGroup& group, const CallResources& resources, const ProbeOperands& ops, uint32_t rows,
                      std::vector<int8_t>& y) {
  CallInputs in;
  in.x = ops.a.data();
  return run_group(group, resources, call_shape(group, {int64_t(rows), ops.K}, nullptr), in, {y.data()}).at(0);
}

// Opens the device and sets the group's device leg up, recording what happened in info; on
// failure info.error says why and nullptr is returned.
std::unique_ptr<SessionDevice> open_device(const ProbeOptions& options, const std::optional<npu::CostModel>& cost_model,
                                           const ProbeOperands& ops, FusedGroup& group, Counters& counters,
                                           DeviceInfo& info) {
  EpOptions settings;
  settings.device = options.device;
  settings.designs_dir = options.designs_dir;
  settings.device_lock = "session";  // held from the first call on: a probe measures the device, not contention
  settings.cost_model = cost_model;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<SessionDevice> device;
  try {
    device = SessionDevice::open(settings, options.lock_path);
  } catch (const std::invalid_argument& e) {
    info.error = e.what();
    return nullptr;
  }
  info.name = device->device().name();
  info.emulated = device->device().emulated();
  info.designs_dir = device->cache().dir();
  group.device = prepare_group_device(*device, {ops.w.data(), QType::Int8, ops.K, ops.N, false}, counters);
  info.setup_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!group.device.gemm) {
    info.error = group.device.failure;
    return nullptr;
  }
  const npu::GemmSetupStats& setup = group.device.gemm->setup_stats();
  info.designs_built = setup.designs_built;
  info.designs_loaded = setup.designs_loaded;
  info.weight_bytes = setup.weight_bytes;
  return device;
}

// The option's cost model, read once; a bad one is an option error.
std::optional<npu::CostModel> probe_cost_model(const ProbeOptions& options) {
  if (options.cost_model.empty()) return std::nullopt;
  npu::Result<npu::CostModel> model = npu::load_cost_model(options.cost_model);
  if (!model) throw ProbeOptionError("cost model '" + options.cost_model + "': " + model.error().reason);
  return *model;
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
  const std::optional<npu::CostModel> cost_model = probe_cost_model(options);
  if (cost_model) result.device.cost_model = cost_model->generation;

  const uint32_t max_rows = *std::max_element(options.rows.begin(), options.rows.end());
  const ProbeOperands ops = make_operands(options.K, options.N, max_rows, options.seed);
  FusedGroup group = probe_group(ops);
  Counters device_counters;

  std::unique_ptr<SessionDevice> device;
  npu::Result<npu::DeviceChoice> choice = npu::select_device(options.device);
  if (!choice) {
    // ONEBIT_DEVICE holds something invalid (the option itself was validated).
    result.device.selected = "none";
    result.device.error = choice.error().to_string();
  } else {
    result.device.selected = npu::device_kind_name(choice->kind);
    result.device.reason = choice->reason;
    if (choice->kind != npu::DeviceKind::kNone)
      device = open_device(options, cost_model, ops, group, device_counters, result.device);
  }

  // The host route: no device, one thread. The device route: every call tried on the device.
  RoutePolicy always_device;
  always_device.min_device_rows = 0;
  const CallResources host_resources{nullptr, &always_device, {}};
  CallResources device_site{device.get(), &always_device, {}};

  const size_t size = size_t(max_rows) * ops.N;
  std::vector<int8_t> host_y(size), device_y(size);
  // A device call that did not run on the device ends the device column (busy, failed).
  auto device_call = [&](uint32_t rows) -> std::optional<CallResult> {
    CallResult call = probe_call(group, device_site, ops, rows, device_y);
    count_call(device_counters, call);
    if (call.on_device()) return call;
    result.device.error = call.device_error.empty() ? route_reason_name(call.reason) : call.device_error;
    device.reset();
    device_site.device = nullptr;
    return std::nullopt;
  };

  for (uint32_t rows : options.rows) {
    RowsResult r;
    r.rows = rows;
    const size_t outputs = size_t(rows) * ops.N;
    std::vector<double> host_ms, total, upload, launch_wait, c_sync, epilogue;
    npu::CallStats stats;
    bool exact = true;
    probe_call(group, host_resources, ops, rows, host_y);  // warm-up
    if (device) (void)device_call(rows);
    for (uint32_t i = 0; i < options.repeat; ++i) {
      host_ms.push_back(ms(probe_call(group, host_resources, ops, rows, host_y).ns));
      if (!device) continue;
      const std::optional<CallResult> call = device_call(rows);
      if (!call) continue;
      exact = exact && std::equal(host_y.begin(), host_y.begin() + ptrdiff_t(outputs), device_y.begin());
      stats = call->device_stats;
      total.push_back(ms(call->ns));
      upload.push_back(stats.upload_ms);
      launch_wait.push_back(stats.launch_wait_ms);
      c_sync.push_back(stats.c_sync_ms);
      epilogue.push_back(ms(call->epilogue_ns));
    }
    r.host = spread_of(host_ms);
    if (device) {
      DeviceRowsResult d;
      d.total = spread_of(total);
      d.upload = spread_of(upload);
      d.launch_wait = spread_of(launch_wait);
      d.c_sync = spread_of(c_sync);
      d.epilogue = spread_of(epilogue);
      d.launches = stats.launches;
      d.padded_rows = stats.padded_rows;
      d.a_bytes = stats.a_bytes_synced;
      d.c_bytes = stats.c_bytes_synced;
      d.c_whole = stats.c_whole;
      d.modelled = stats.modelled;  // the same for every call of these rows
      r.ratio = d.total.median_ms > 0 ? r.host.median_ms / d.total.median_ms : 0.0;
      if (d.modelled) r.modelled_ratio = r.host.median_ms / (d.modelled->total_us() / 1e3);
      r.device = d;
      r.exact = exact;
    }
    result.rows.push_back(r);
  }
  for (size_t i = 0; i < static_cast<size_t>(Counter::Count); ++i) {
    const auto c = static_cast<Counter>(i);
    result.device_counters.emplace_back(counter_name(c), device_counters.get(c));
  }
  return result;
}

}  // namespace onebit::probes
