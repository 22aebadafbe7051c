// SPDX-License-Identifier: Apache-2.0
#include "ort_runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstring>
#include <mutex>

#include "js_error.h"
#include "onebit_ep.h"

namespace onebit::node {

namespace {

constexpr const char* kEpName = ONEBIT_EP_NAME;
constexpr const char* kRegistrationName = ONEBIT_EP_REGISTRATION_NAME;

// The library is opened with dlopen: its entry points are reached through pointers of the
// header's types.
using GetCountersFn = decltype(&OnebitEp_GetCounters);
using ApiVersionFn = decltype(&OnebitEp_OrtApiVersion);

std::mutex load_mutex;
OrtRuntime* loaded = nullptr;

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

// ORT's API version equals its minor release number (1.30 serves API 1..30).
int api_version_of(const std::string& version) {
  const size_t dot = version.find('.');
  return dot == std::string::npos ? 0 : std::atoi(version.c_str() + dot + 1);
}

const OrtApi* load_ort(const std::string& path, std::string& version) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw CodedError("ONEBIT_ORT", "cannot load the ORT library of onnxruntime-node (" + path + "): " + dlerror() +
                                       ". Install it next to onebit-ep: npm install onnxruntime-node");
  auto get_api_base = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(handle, "OrtGetApiBase"));
  if (get_api_base == nullptr)
    throw CodedError("ONEBIT_ORT", path + " is not an ONNX Runtime library (no OrtGetApiBase)");
  version = get_api_base()->GetVersionString();
  if (api_version_of(version) < ORT_API_VERSION)
    throw CodedError("ONEBIT_ORT", "onnxruntime-node ships ORT " + version + ", but onebit-ep needs ORT API " +
                                       std::to_string(ORT_API_VERSION) + " (ORT 1." + std::to_string(ORT_API_VERSION) +
                                       " or newer): upgrade onnxruntime-node");
  const OrtApi* api = get_api_base()->GetApi(ORT_API_VERSION);
  if (api == nullptr)
    throw CodedError("ONEBIT_ORT", "ORT " + version + " refused API version " + std::to_string(ORT_API_VERSION));
  return api;
}

// Opens the EP library ourselves first: to say clearly what is wrong before ORT tries, and to
// reach its counters entry point. ORT's own dlopen of the same file shares this handle.
void* open_ep_library(const std::string& path, int runtime_api, int& ep_api) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw CodedError("ONEBIT_EP_LIBRARY", "cannot load the onebit EP library " + path + ": " + dlerror() +
                                              ". Reinstall onebit-ep (npm rebuild onebit-ep builds it from source) or "
                                              "point ONEBIT_EP_LIB at a built libonebit_ep.so");
  auto api_version = reinterpret_cast<ApiVersionFn>(dlsym(handle, "OnebitEp_OrtApiVersion"));
  if (api_version == nullptr || dlsym(handle, "CreateEpFactories") == nullptr)
    throw CodedError("ONEBIT_EP_LIBRARY", path +
                                              " is not a onebit EP library of this version (missing entry points): "
                                              "rebuild it with this package (npm rebuild onebit-ep)");
  ep_api = api_version();
  if (ep_api > runtime_api)
    throw CodedError("ONEBIT_EP_LIBRARY", path + " was built for ORT API " + std::to_string(ep_api) +
                                              ", newer than the ORT of onnxruntime-node (API " +
                                              std::to_string(runtime_api) +
                                              "): install a newer onnxruntime-node or rebuild onebit-ep against it");
  return handle;
}

const OrtEpDevice* find_ep_device(const OrtRuntime& rt) {
  const OrtEpDevice* const* devices = nullptr;
  size_t count = 0;
  check(rt.api->GetEpDevices(rt.env, &devices, &count));
  for (size_t i = 0; i < count; ++i)
    if (std::strcmp(rt.api->EpDevice_EpName(devices[i]), kEpName) == 0) return devices[i];
  throw CodedError("ONEBIT_EP_LIBRARY", rt.ep_library_path + " registered, but ORT offers no " + kEpName +
                                            " device: the library may be built for another ORT API");
}

}  // namespace

void check(OrtStatus* status) {
  if (status == nullptr) return;
  const OrtApi* api = loaded ? loaded->api : nullptr;
  std::string message = api ? api->GetErrorMessage(status) : "ORT error";
  if (api) api->ReleaseStatus(status);
  throw CodedError("ONEBIT_ORT", message);
}

bool OrtRuntime::counters(const std::string& session_id, CounterList& out) const {
  auto read = reinterpret_cast<GetCountersFn>(get_counters);
  const int64_t count = read(session_id.c_str(), nullptr, 0);
  if (count < 0) return false;
  std::vector<OnebitEpCounter> raw(static_cast<size_t>(count));
  read(session_id.c_str(), raw.data(), raw.size());
  out.clear();
  for (const OnebitEpCounter& c : raw) out.emplace_back(c.name, c.value);
  return true;
}

const OrtRuntime& load_runtime(const std::string& ort_library_path, const std::string& ep_library_path) {
  std::lock_guard lock(load_mutex);
  const std::string ort_path = real_path(ort_library_path);
  const std::string ep_path = real_path(ep_library_path);
  if (loaded != nullptr) {
    if (loaded->ep_library_path != ep_path)
      throw CodedError("ONEBIT_EP_LIBRARY", "the onebit EP is already registered from " + loaded->ep_library_path +
                                                "; one process can register it only once");
    return *loaded;
  }
  auto* rt = new OrtRuntime();  // lives as long as the process: ORT's env is a process singleton
  rt->api = load_ort(ort_path, rt->ort_version);
  rt->ep_library_path = ep_path;
  void* ep_handle = open_ep_library(ep_path, api_version_of(rt->ort_version), rt->ep_api_version);
  rt->get_counters = dlsym(ep_handle, "OnebitEp_GetCounters");
  loaded = rt;  // from here on check() can use the API
  try {
    check(rt->api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "onebit-ep", &rt->env));
    OrtStatus* status = rt->api->RegisterExecutionProviderLibrary(rt->env, kRegistrationName, ep_path.c_str());
    if (status != nullptr) {
      // Someone in this process registered it already (e.g. another host): reuse their registration.
      const std::string message = rt->api->GetErrorMessage(status);
      rt->api->ReleaseStatus(status);
      if (message.find("already registered") == std::string::npos)
        throw CodedError("ONEBIT_EP_LIBRARY", "ORT could not register " + ep_path + ": " + message);
    }
    rt->ep_device = find_ep_device(*rt);
  } catch (...) {
    loaded = nullptr;
    throw;
  }
  return *rt;
}

const OrtRuntime& runtime() {
  if (loaded == nullptr || loaded->ep_device == nullptr)
    throw CodedError("ONEBIT_NOT_INITIALIZED", "onebit-ep is not initialised: call onebit.register() first");
  return *loaded;
}

}  // namespace onebit::node
