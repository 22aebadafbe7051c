// SPDX-License-Identifier: Apache-2.0
// The factory ORT gets from CreateEpFactories: names the EP, offers it for the CPU device,
// and creates one OnebitEp per session with that session's provider options.
#include <map>
#include <mutex>
#include <string>

#include "engine/intra_op_threads.h"
#include "execution_provider.h"
#include "kernels/gemm_q8_kernels.h"

namespace onebit {

namespace {

// The vendor is this project, not a hardware maker: it has no PCI vendor ID to report.
constexpr const char* kVendor = "onebit-ep";
constexpr uint32_t kVendorId = 0;
constexpr const char* kVersion = ONEBIT_EP_VERSION;

// The lowest ORT API that has every function and callback the library uses (the newest are
// GetTensorElementTypeAndShapeDataReference and OrtEp::IsConcurrentRunSupported, both 1.24). The
// API table only grows, so asking for 24 works in every later ORT; structs we fill keep
// ort_version_supported = ORT_API_VERSION, which tells ORT how many of their fields we know.
constexpr uint32_t kNeededOrtApi = 24;

// An older ORT refuses GetApi(kNeededOrtApi); API 1 still has CreateStatus, so the host gets a reason.
OrtStatus* too_old_ort_status(const OrtApiBase* api_base) {
  const OrtApi* oldest = api_base->GetApi(1);
  if (oldest == nullptr) return nullptr;
  const std::string message = std::string("onebit: ") + ONEBIT_EP_NAME + " " + ONEBIT_EP_VERSION + " needs ORT 1." +
                              std::to_string(kNeededOrtApi) + " or newer (ORT API " + std::to_string(kNeededOrtApi) +
                              "); this process runs ORT " + api_base->GetVersionString();
  return oldest->CreateStatus(ORT_NOT_IMPLEMENTED, message.c_str());
}

const char* ORT_API_CALL factory_name(const OrtEpFactory*) noexcept { return kEpName; }
const char* ORT_API_CALL factory_vendor(const OrtEpFactory*) noexcept { return kVendor; }
uint32_t ORT_API_CALL factory_vendor_id(const OrtEpFactory*) noexcept { return kVendorId; }
const char* ORT_API_CALL factory_version(const OrtEpFactory*) noexcept { return kVersion; }

OrtStatus* ORT_API_CALL supported_devices(OrtEpFactory* factory, const OrtHardwareDevice* const* devices,
                                          size_t num_devices, OrtEpDevice** ep_devices, size_t max_ep_devices,
                                          size_t* num_ep_devices) noexcept {
  *num_ep_devices = 0;
  return guarded([&] {
    for (size_t i = 0; i < num_devices && *num_ep_devices < max_ep_devices; ++i) {
      if (ort().HardwareDevice_Type(devices[i]) != OrtHardwareDeviceType_CPU) continue;
      check(ort_ep().CreateEpDevice(factory, devices[i], nullptr, nullptr, &ep_devices[*num_ep_devices]));
      ++*num_ep_devices;
      break;  // one host device is enough: the EP runs on the CPU ORT offers first
    }
  });
}

// The session's config entries, key to value.
std::map<std::string, std::string> session_config(const OrtSessionOptions* session_options) {
  OrtKeyValuePairs* entries = nullptr;
  check(ort().GetSessionOptionsConfigEntries(session_options, &entries));
  const char* const* keys = nullptr;
  const char* const* values = nullptr;
  size_t count = 0;
  ort().GetKeyValuePairs(entries, &keys, &values, &count);
  std::map<std::string, std::string> config;
  for (size_t i = 0; i < count; ++i) config[keys[i]] = values[i];
  ort().ReleaseKeyValuePairs(entries);
  return config;
}

// Provider options reach us as session config entries "ep.<lower-cased EP name>.<key>".
std::map<std::string, std::string> provider_options(const std::map<std::string, std::string>& config) {
  std::string prefix = "ep.";
  for (const char* c = kEpName; *c; ++c) prefix += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  prefix += ".";
  std::map<std::string, std::string> options;
  for (const auto& [key, value] : config)
    if (key.rfind(prefix, 0) == 0) options[key.substr(prefix.size())] = value;
  return options;
}

// One factory per loaded library, however many names register it: ORT (and genai's append by EP
// name) refuses a session over devices of two factories ("All OrtEpDevice values in ep_devices must
// have the same execution provider"), and both names list a device of this EP. ORT may also release
// the factory (unregistering a name) while sessions still hold EPs it made, and calls its ReleaseEp
// later. So the factory counts its holds, one per registration and one per live EP, and the last
// drop frees it. The lock makes hold, drop and the reuse in CreateEpFactories one step each.
struct EpFactory : OrtEpFactory {
  EpFactory();

  static OrtEpFactory* hold_shared() {
    const std::lock_guard<std::mutex> lock(mutex);
    if (shared == nullptr) shared = new EpFactory();
    ++shared->holds;
    return shared;
  }
  static void drop() {
    const std::lock_guard<std::mutex> lock(mutex);
    if (--shared->holds == 0) {
      delete shared;
      shared = nullptr;
    }
  }

 private:
  size_t holds = 0;
  static inline std::mutex mutex;
  static inline EpFactory* shared = nullptr;
};

OrtStatus* ORT_API_CALL create_ep(OrtEpFactory*, const OrtHardwareDevice* const*, const OrtKeyValuePairs* const*,
                                  size_t, const OrtSessionOptions* session_options, const OrtLogger* logger,
                                  OrtEp** ep) noexcept {
  *ep = nullptr;
  return guarded([&] {
    // A forced host kernel this CPU cannot run fails the session here, before anything is packed.
    if (const std::string error = kernel_choice_error(); !error.empty()) throw OrtError(ORT_INVALID_ARGUMENT, error);
    try {
      const std::map<std::string, std::string> config = session_config(session_options);
      *ep = new OnebitEp(parse_ep_options(provider_options(config)), intra_op_threads_sleep(config), logger);
      EpFactory::hold_shared();
    } catch (const std::invalid_argument& e) {
      throw OrtError(ORT_INVALID_ARGUMENT, e.what());
    }
  });
}

void ORT_API_CALL release_ep(OrtEpFactory*, OrtEp* ep) noexcept {
  delete static_cast<OnebitEp*>(ep);
  EpFactory::drop();
}

// ORT requires this callback; a host-memory EP needs no data transfer.
OrtStatus* ORT_API_CALL create_data_transfer(OrtEpFactory*, OrtDataTransferImpl** data_transfer) noexcept {
  *data_transfer = nullptr;
  return nullptr;
}

bool ORT_API_CALL is_stream_aware(const OrtEpFactory*) noexcept { return false; }

EpFactory::EpFactory() : OrtEpFactory{} {
  ort_version_supported = ORT_API_VERSION;
  GetName = factory_name;
  GetVendor = factory_vendor;
  GetVendorId = factory_vendor_id;
  GetVersion = factory_version;
  GetSupportedDevices = supported_devices;
  CreateEp = create_ep;
  ReleaseEp = release_ep;
  CreateDataTransfer = create_data_transfer;
  IsStreamAware = is_stream_aware;
}

}  // namespace

}  // namespace onebit

extern "C" {

int OnebitEp_OrtApiVersion(void) { return static_cast<int>(onebit::kNeededOrtApi); }

__attribute__((visibility("default"))) OrtStatus* CreateEpFactories(const char*, const OrtApiBase* api_base,
                                                                    const OrtLogger*, OrtEpFactory** factories,
                                                                    size_t max_factories, size_t* num_factories) {
  *num_factories = 0;
  const OrtApi* api = api_base->GetApi(onebit::kNeededOrtApi);
  if (api == nullptr) return onebit::too_old_ort_status(api_base);
  onebit::set_ort_api(api, api->GetEpApi());
  if (max_factories < 1) return api->CreateStatus(ORT_INVALID_ARGUMENT, "onebit: no room for the EP factory");
  return onebit::guarded([&] {
    factories[0] = onebit::EpFactory::hold_shared();
    *num_factories = 1;
  });
}

__attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory*) {
  onebit::EpFactory::drop();  // freed now, or with the last EP a live session still holds
  return nullptr;
}
}
