// SPDX-License-Identifier: Apache-2.0
// One lean C-API process for bench_shared_weights.py --host c: loads ORT by path, creates one
// session of MODEL on the onebit EP (with the packed-weights cache folder CACHE, "" for none),
// runs one decode step (every symbolic dim 1, "past" dims 0: the Python child's feeds), waits until
// all PROCESSES processes sharing the folder BARRIER are ready, reads its PSS, and prints
//   {"created_s": ..., "pss_mib": ...}
// Its own state is ORT's and the EP's alone, so the processes' total shows what the cache shares,
// without Python's ~43 MiB a process (BENCHMARKS.md).
#include <dlfcn.h>
#include <onebit_ep.h>
#include <onnxruntime_c_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

const OrtApi* api = nullptr;

void check(OrtStatus* status, const char* what) {
  if (status == nullptr) return;
  std::fprintf(stderr, "%s failed: %s\n", what, api->GetErrorMessage(status));
  std::exit(1);
}

double pss_mib() {
  std::ifstream rollup("/proc/self/smaps_rollup");
  for (std::string line; std::getline(rollup, line);)
    if (line.rfind("Pss:", 0) == 0) return std::stod(line.substr(4)) / 1024;
  return -1;
}

// Marks this process at `phase` and waits for all `processes` to get there.
void wait_for(const std::filesystem::path& barrier, const std::string& phase, size_t processes) {
  std::ofstream(barrier / (phase + "." + std::to_string(getpid())));
  for (;;) {
    size_t arrived = 0;
    for (const auto& entry : std::filesystem::directory_iterator(barrier))
      arrived += entry.path().filename().string().rfind(phase + ".", 0) == 0;
    if (arrived >= processes) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// One input of a decode step with no past: int64 inputs hold 1 (input_ids 42), float ones 1.0.
OrtValue* decode_feed(OrtSession* session, size_t index, OrtAllocator* allocator, const char* name) {
  OrtTypeInfo* type = nullptr;
  check(api->SessionGetInputTypeInfo(session, index, &type), "SessionGetInputTypeInfo");
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  check(api->CastTypeInfoToTensorInfo(type, &tensor), "CastTypeInfoToTensorInfo");
  ONNXTensorElementDataType element;
  check(api->GetTensorElementType(tensor, &element), "GetTensorElementType");
  size_t rank = 0;
  check(api->GetDimensionsCount(tensor, &rank), "GetDimensionsCount");
  std::vector<int64_t> dims(rank);
  std::vector<const char*> symbols(rank);
  check(api->GetDimensions(tensor, dims.data(), rank), "GetDimensions");
  check(api->GetSymbolicDimensions(tensor, symbols.data(), rank), "GetSymbolicDimensions");
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] < 0) dims[d] = std::strcmp(symbols[d], "past") == 0 ? 0 : 1;
    count *= static_cast<size_t>(dims[d]);
  }
  api->ReleaseTypeInfo(type);
  OrtValue* value = nullptr;
  check(api->CreateTensorAsOrtValue(allocator, dims.data(), rank, element, &value), "CreateTensorAsOrtValue");
  void* data = nullptr;
  check(api->GetTensorMutableData(value, &data), "GetTensorMutableData");
  if (element == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
    std::fill_n(static_cast<int64_t*>(data), count, std::strcmp(name, "input_ids") == 0 ? 42 : 1);
  else if (element == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
    std::fill_n(static_cast<float*>(data), count, 1.0f);
  else
    check(api->CreateStatus(ORT_INVALID_ARGUMENT, "inputs other than int64 and float32"), name);
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr,
                 "usage: %s <libonnxruntime.so> <libonebit_ep.so> <model.onnx> <cache dir or \"\"> "
                 "<barrier dir> <processes>\n",
                 argv[0]);
    return 2;
  }
  void* ort_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (ort_lib == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto get_api_base = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(ort_lib, "OrtGetApiBase"));
  api = get_api_base()->GetApi(ORT_API_VERSION);
  const std::string cache = argv[4];
  const std::filesystem::path barrier = argv[5];
  const size_t processes = std::stoul(argv[6]);

  OrtEnv* env = nullptr;
  check(api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "session_memory_host", &env), "CreateEnv");
  check(api->RegisterExecutionProviderLibrary(env, "onebit", argv[2]), "RegisterExecutionProviderLibrary");
  const OrtEpDevice* const* devices = nullptr;
  size_t num_devices = 0;
  check(api->GetEpDevices(env, &devices, &num_devices), "GetEpDevices");
  std::vector<const OrtEpDevice*> ours;
  for (size_t i = 0; i < num_devices; ++i)
    if (std::strcmp(api->EpDevice_EpName(devices[i]), ONEBIT_EP_NAME) == 0) ours.push_back(devices[i]);
  if (ours.empty()) check(api->CreateStatus(ORT_FAIL, "no onebit device"), "GetEpDevices");
  OrtSessionOptions* options = nullptr;
  check(api->CreateSessionOptions(&options), "CreateSessionOptions");
  const char* keys[] = {"packed_cache_dir"};
  const char* values[] = {cache.c_str()};
  check(api->SessionOptionsAppendExecutionProvider_V2(options, env, ours.data(), ours.size(), keys, values,
                                                      cache.empty() ? 0 : 1),
        "SessionOptionsAppendExecutionProvider_V2");

  const auto start = std::chrono::steady_clock::now();
  OrtSession* session = nullptr;
  check(api->CreateSession(env, argv[3], options, &session), "CreateSession");
  const double created = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  OrtAllocator* allocator = nullptr;
  check(api->GetAllocatorWithDefaultOptions(&allocator), "GetAllocatorWithDefaultOptions");
  size_t inputs = 0, outputs = 0;
  check(api->SessionGetInputCount(session, &inputs), "SessionGetInputCount");
  check(api->SessionGetOutputCount(session, &outputs), "SessionGetOutputCount");
  std::vector<char*> input_names(inputs), output_names(outputs);
  std::vector<OrtValue*> feeds(inputs), results(outputs, nullptr);
  for (size_t i = 0; i < inputs; ++i) {
    check(api->SessionGetInputName(session, i, allocator, &input_names[i]), "SessionGetInputName");
    feeds[i] = decode_feed(session, i, allocator, input_names[i]);
  }
  for (size_t i = 0; i < outputs; ++i)
    check(api->SessionGetOutputName(session, i, allocator, &output_names[i]), "SessionGetOutputName");
  check(api->Run(session, nullptr, input_names.data(), feeds.data(), inputs, output_names.data(), outputs,
                 results.data()),
        "Run");

  wait_for(barrier, "ready", processes);
  const double pss = pss_mib();
  wait_for(barrier, "measured", processes);
  std::printf("{\"created_s\": %.6f, \"pss_mib\": %.3f}\n", created, pss);
  return 0;  // the process's end releases everything
}
