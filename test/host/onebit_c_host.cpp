// SPDX-License-Identifier: Apache-2.0
// A plain C-API ORT application: loads libonnxruntime by path, registers libonebit_ep.so,
// appends our EP device, runs a model with a deterministic int8/uint8 input [M, K] and prints
// the output. test/python/test_c_host.py checks what it prints against exact arithmetic.
#include <dlfcn.h>
#include <onebit_ep.h>
#include <onnxruntime_c_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const OrtApi* api = nullptr;

void check(OrtStatus* status, const char* what) {
  if (status == nullptr) return;
  std::fprintf(stderr, "%s failed: %s\n", what, api->GetErrorMessage(status));
  api->ReleaseStatus(status);
  std::exit(1);
}

// The input every caller can reproduce: element i is (i * 37 + 11) mod 256, as int8 or uint8.
std::vector<uint8_t> deterministic_input(size_t count) {
  std::vector<uint8_t> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return data;
}

void print_output(const OrtValue* value) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(api->GetTensorTypeAndShape(value, &info), "GetTensorTypeAndShape");
  ONNXTensorElementDataType type;
  size_t count = 0;
  check(api->GetTensorElementType(info, &type), "GetTensorElementType");
  check(api->GetTensorShapeElementCount(info, &count), "GetTensorShapeElementCount");
  api->ReleaseTensorTypeAndShapeInfo(info);
  const void* data = nullptr;
  check(api->GetTensorData(value, &data), "GetTensorData");
  std::printf("output:");
  for (size_t i = 0; i < count; ++i) {
    if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8)
      std::printf(" %d", static_cast<const int8_t*>(data)[i]);
    else if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)
      std::printf(" %u", static_cast<const uint8_t*>(data)[i]);
    else
      std::printf(" %.9g", static_cast<const float*>(data)[i]);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <libonnxruntime.so> <libonebit_ep.so> <model.onnx> <M> <K>\n", argv[0]);
    return 2;
  }
  void* ort_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (ort_lib == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto get_api_base = reinterpret_cast<const OrtApiBase* (*)()>(dlsym(ort_lib, "OrtGetApiBase"));
  api = get_api_base()->GetApi(ORT_API_VERSION);
  const int64_t M = std::stoll(argv[4]);
  const int64_t K = std::stoll(argv[5]);

  OrtEnv* env = nullptr;
  check(api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "onebit_c_host", &env), "CreateEnv");
  check(api->RegisterExecutionProviderLibrary(env, "onebit", argv[2]), "RegisterExecutionProviderLibrary");
  OrtStatus* again = api->RegisterExecutionProviderLibrary(env, "onebit", argv[2]);
  std::printf("second registration: %s\n", again ? api->GetErrorMessage(again) : "accepted");
  if (again) api->ReleaseStatus(again);

  const OrtEpDevice* const* devices = nullptr;
  size_t num_devices = 0;
  check(api->GetEpDevices(env, &devices, &num_devices), "GetEpDevices");
  std::vector<const OrtEpDevice*> ours;
  for (size_t i = 0; i < num_devices; ++i)
    if (std::strcmp(api->EpDevice_EpName(devices[i]), ONEBIT_EP_NAME) == 0) ours.push_back(devices[i]);
  std::printf("devices: %zu\n", ours.size());
  if (ours.empty()) return 1;

  OrtSessionOptions* options = nullptr;
  check(api->CreateSessionOptions(&options), "CreateSessionOptions");
  const char* keys[] = {"trace"};
  const char* values[] = {"1"};
  check(api->SessionOptionsAppendExecutionProvider_V2(options, env, ours.data(), ours.size(), keys, values, 1),
        "SessionOptionsAppendExecutionProvider_V2");
  OrtSession* session = nullptr;
  check(api->CreateSession(env, argv[3], options, &session), "CreateSession");

  OrtAllocator* allocator = nullptr;
  check(api->GetAllocatorWithDefaultOptions(&allocator), "GetAllocatorWithDefaultOptions");
  char* input_name = nullptr;
  char* output_name = nullptr;
  check(api->SessionGetInputName(session, 0, allocator, &input_name), "SessionGetInputName");
  check(api->SessionGetOutputName(session, 0, allocator, &output_name), "SessionGetOutputName");
  OrtTypeInfo* input_type = nullptr;
  check(api->SessionGetInputTypeInfo(session, 0, &input_type), "SessionGetInputTypeInfo");
  const OrtTensorTypeAndShapeInfo* input_tensor = nullptr;
  check(api->CastTypeInfoToTensorInfo(input_type, &input_tensor), "CastTypeInfoToTensorInfo");
  ONNXTensorElementDataType element;
  check(api->GetTensorElementType(input_tensor, &element), "GetTensorElementType");
  api->ReleaseTypeInfo(input_type);

  std::vector<uint8_t> x = deterministic_input(static_cast<size_t>(M * K));
  const int64_t shape[] = {M, K};
  OrtMemoryInfo* memory = nullptr;
  check(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "CreateCpuMemoryInfo");
  OrtValue* input = nullptr;
  check(api->CreateTensorWithDataAsOrtValue(memory, x.data(), x.size(), shape, 2, element, &input), "CreateTensor");
  OrtValue* output = nullptr;
  check(api->Run(session, nullptr, &input_name, &input, 1, &output_name, 1, &output), "Run");
  print_output(output);
  std::printf("library: %s %s\n", ONEBIT_EP_NAME, OnebitEp_Version());

  api->ReleaseValue(output);
  api->ReleaseValue(input);
  api->ReleaseMemoryInfo(memory);
  check(api->AllocatorFree(allocator, input_name), "AllocatorFree");
  check(api->AllocatorFree(allocator, output_name), "AllocatorFree");
  api->ReleaseSession(session);  // prints the trace line: our EP ran
  api->ReleaseSessionOptions(options);
  check(api->UnregisterExecutionProviderLibrary(env, "onebit"), "UnregisterExecutionProviderLibrary");
  api->ReleaseEnv(env);
  return 0;
}
