// SPDX-License-Identifier: Apache-2.0
#include "engine/shared_device.h"

#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>

namespace onebit {

PackRegistry<OpenedDevice>& opened_devices_registry() {
  static auto* registry = new PackRegistry<OpenedDevice>;  // never destroyed: sessions may outlive statics at exit
  return *registry;
}

npu::Result<std::shared_ptr<const OpenedDevice>> open_shared_device(npu::DeviceKind kind,
                                                                    const npu::DeviceOptions& options, bool share) {
  static std::atomic<uint64_t> next_id{1};
  std::optional<npu::Error> failed;
  const auto open = [&] {
    OpenedDevice opened;
    npu::Result<std::unique_ptr<npu::Device>> device = npu::open_device(kind, options);
    if (!device) {
      failed = device.error();
      return opened;
    }
    opened.id = next_id.fetch_add(1);
    opened.device = std::move(device).value();
    opened.holds = std::make_unique<npu::LockHolds>(*opened.device);
    return opened;
  };
  if (!share) {
    OpenedDevice own = open();
    if (failed) return *failed;
    return std::make_shared<const OpenedDevice>(std::move(own));
  }
  // A failed open leaves an entry no lookup takes, freed on return. The pid keeps a forked child
  // off its parent's device: the copy has no worker thread, and its lock is the parent's open file
  // description, which flock would let both processes hold at once.
  const std::string key =
      std::string(npu::device_kind_name(kind)) + " " + std::to_string(::getpid()) + " " + options.lock_path;
  std::shared_ptr<const OpenedDevice> opened =
      opened_devices_registry().find_or_pack(key, [](const OpenedDevice& d) { return d.device != nullptr; }, open);
  if (failed) return *failed;
  return opened;
}

}  // namespace onebit
