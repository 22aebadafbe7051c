// SPDX-License-Identifier: Apache-2.0
#include "tensor_io.h"

#include <cstring>
#include <string>
#include <vector>

#include "js_error.h"
#include "ort_runtime.h"
#include "output_memory.h"

namespace onebit::node {

namespace {

// Bytes for `count` elements; 0 for strings and for types we do not carry.
size_t byte_size(ONNXTensorElementDataType type, size_t count) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return count * 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return count * 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return count * 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return count;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4:
      return (count + 1) / 2;  // two values a byte
    default:
      return 0;
  }
}

// `what` names the tensor in the error (code `code`) for a negative dimension.
std::vector<int64_t> read_dims(const std::string& what, const char* code, const Napi::Array& array) {
  std::vector<int64_t> dims(array.Length());
  for (uint32_t i = 0; i < dims.size(); ++i) {
    dims[i] = array.Get(i).As<Napi::Number>().Int64Value();
    if (dims[i] < 0) throw CodedError(code, what + " has a negative dimension");
  }
  return dims;
}

size_t element_count(const std::vector<int64_t>& dims) {
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  return count;
}

struct TypeAndShape {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
};

TypeAndShape type_and_shape(const OrtValue* value) {
  const OrtApi& api = *runtime().api;
  OrtTensorTypeAndShapeInfo* info = nullptr;
  check(api.GetTensorTypeAndShape(value, &info));
  TypeAndShape result;
  size_t rank = 0;
  OrtStatus* status = api.GetTensorElementType(info, &result.type);
  if (status == nullptr) status = api.GetDimensionsCount(info, &rank);
  result.dims.resize(rank);
  if (status == nullptr && rank > 0) status = api.GetDimensions(info, result.dims.data(), rank);
  api.ReleaseTensorTypeAndShapeInfo(info);
  check(status);
  return result;
}

OrtValue* string_input(const std::string& name, const std::vector<int64_t>& dims, const Napi::Value& data) {
  const OrtApi& api = *runtime().api;
  if (!data.IsArray()) throw CodedError("ONEBIT_INPUT", "input '" + name + "' is a string tensor: its data must be a string array");
  Napi::Array array = data.As<Napi::Array>();
  if (array.Length() != element_count(dims))
    throw CodedError("ONEBIT_INPUT", "input '" + name + "' has " + std::to_string(array.Length()) +
                                         " strings for a shape of " + std::to_string(element_count(dims)) + " elements");
  std::vector<std::string> strings(array.Length());
  std::vector<const char*> pointers(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    strings[i] = array.Get(i).ToString().Utf8Value();
    pointers[i] = strings[i].c_str();
  }
  OrtAllocator* allocator = nullptr;
  check(api.GetAllocatorWithDefaultOptions(&allocator));
  OrtValue* value = nullptr;
  check(api.CreateTensorAsOrtValue(allocator, dims.data(), dims.size(), ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &value));
  OrtStatus* status = api.FillStringTensor(value, pointers.data(), pointers.size());
  if (status != nullptr) api.ReleaseValue(value);
  check(status);
  return value;
}

// Where the tensors over memory we do not allocate live (JS buffers, earlier outputs), made once
// (a tensor keeps its own copy of it).
const OrtMemoryInfo* cpu_memory() {
  static const OrtMemoryInfo* info = [] {
    OrtMemoryInfo* made = nullptr;
    check(runtime().api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &made));
    return made;
  }();
  return info;
}

Napi::Array dims_array(Napi::Env env, const std::vector<int64_t>& dims) {
  Napi::Array array = Napi::Array::New(env, dims.size());
  for (uint32_t i = 0; i < dims.size(); ++i) array.Set(i, Napi::Number::New(env, static_cast<double>(dims[i])));
  return array;
}

Napi::Array string_output(Napi::Env env, const OrtValue* value, size_t count) {
  const OrtApi& api = *runtime().api;
  Napi::Array array = Napi::Array::New(env, count);
  for (size_t i = 0; i < count; ++i) {
    size_t length = 0;
    check(api.GetStringTensorElementLength(value, i, &length));
    std::string text(length, '\0');
    if (length > 0) check(api.GetStringTensorElement(value, length, i, text.data()));
    array.Set(static_cast<uint32_t>(i), Napi::String::New(env, text));
  }
  return array;
}

}  // namespace

namespace {

// The bytes of a typed array that fit `type` and `dims`, or a CodedError(code) naming `what`.
ByteRange typed_array_bytes(const std::string& what, const char* code, ONNXTensorElementDataType type,
                            const std::vector<int64_t>& dims, const Napi::Value& data) {
  const size_t expected = byte_size(type, element_count(dims));
  if (expected == 0 && element_count(dims) > 0)
    throw CodedError(code, what + " has an element type onebit-ep cannot pass (" + std::to_string(type) + ")");
  if (!data.IsTypedArray()) throw CodedError(code, what + " must carry its data in a typed array");
  // The buffer as napi_get_typedarray_info gives it: an ArrayBuffer or a SharedArrayBuffer (which
  // Napi::ArrayBuffer::Data() refuses with a bare "Invalid argument").
  napi_value buffer = nullptr;
  void* source = nullptr;
  bool detached = false;
  if (napi_get_typedarray_info(data.Env(), data, nullptr, nullptr, &source, &buffer, nullptr) != napi_ok ||
      napi_is_detached_arraybuffer(data.Env(), buffer, &detached) != napi_ok)
    throw CodedError(code, what + ": its typed array cannot be read");
  if (detached)
    throw CodedError(code, what + " is backed by a detached ArrayBuffer (transferred away, e.g. by postMessage or "
                                  "structuredClone): keep the data in this thread until run() returns, or pass a copy");
  const size_t byte_length = data.As<Napi::TypedArray>().ByteLength();
  if (byte_length != expected)
    throw CodedError(code, what + " has " + std::to_string(byte_length) + " bytes of data, but its type and shape need " +
                               std::to_string(expected));
  return {static_cast<const uint8_t*>(source), expected};
}

// A tensor over `memory` (one of no elements is ORT's own: there is nothing to point at).
OrtValue* tensor_over(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims) {
  const OrtApi& api = *runtime().api;
  OrtValue* value = nullptr;
  if (memory.size == 0) {
    OrtAllocator* allocator = nullptr;
    check(api.GetAllocatorWithDefaultOptions(&allocator));
    check(api.CreateTensorAsOrtValue(allocator, dims.data(), dims.size(), type, &value));
    return value;
  }
  check(api.CreateTensorWithDataAsOrtValue(cpu_memory(), const_cast<uint8_t*>(memory.begin), memory.size,
                                                      dims.data(), dims.size(), type, &value));
  return value;
}

}  // namespace

OrtValue* input_value(const std::string& name, const Napi::Object& tensor, const PropertyKeys& keys,
                      const std::vector<ByteRange>& writable, std::vector<SharedOutput>& borrowed) {
  const auto type = static_cast<ONNXTensorElementDataType>(tensor.Get(keys.type).As<Napi::Number>().Int32Value());
  const std::vector<int64_t> dims = read_dims("input '" + name + "'", "ONEBIT_INPUT", tensor.Get(keys.dims).As<Napi::Array>());
  Napi::Value data = tensor.Get(keys.data);
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) return string_input(name, dims, data);
  const ByteRange memory = typed_array_bytes("input '" + name + "'", "ONEBIT_INPUT", type, dims, data);
  // Inside a pre-allocated output of this run (past and present KV in one buffer): read in place,
  // the run holds that tensor.
  for (const ByteRange& output : writable)
    if (memory.size > 0 && output.holds(memory.begin, memory.size)) return tensor_over(memory, type, dims);
  // An earlier output fed back (a KV cache) is read in place; `borrowed` keeps its memory alive
  // through the run even if the caller transfers or drops the buffer meanwhile.
  if (SharedOutput output = memory.size > 0 ? find_output(memory.begin, memory.size) : nullptr) {
    OrtValue* value = tensor_over(memory, type, dims);
    borrowed.push_back(std::move(output));
    return value;
  }
  // Any other buffer is copied now, on the JS thread: the run reads it on a worker thread, and the
  // caller may transfer, detach or overwrite its buffer meanwhile (or share it with other threads).
  const OrtApi& api = *runtime().api;
  OrtAllocator* allocator = nullptr;
  check(api.GetAllocatorWithDefaultOptions(&allocator));
  OrtValue* value = nullptr;
  check(api.CreateTensorAsOrtValue(allocator, dims.data(), dims.size(), type, &value));
  if (memory.size > 0) {
    void* target = nullptr;
    OrtStatus* status = api.GetTensorMutableData(value, &target);
    if (status != nullptr) api.ReleaseValue(value);
    check(status);
    std::memcpy(target, memory.begin, memory.size);
  }
  return value;
}

OrtValue* preallocated_output(const std::string& name, const Napi::Object& tensor, const PropertyKeys& keys,
                              ByteRange& memory) {
  const auto type = static_cast<ONNXTensorElementDataType>(tensor.Get(keys.type).As<Napi::Number>().Int32Value());
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    throw CodedError("ONEBIT_OUTPUT", "output '" + name + "': a string tensor cannot be pre-allocated (pass null for it)");
  const std::string what = "pre-allocated output '" + name + "'";
  const std::vector<int64_t> dims = read_dims(what, "ONEBIT_OUTPUT", tensor.Get(keys.dims).As<Napi::Array>());
  memory = typed_array_bytes(what, "ONEBIT_OUTPUT", type, dims, tensor.Get(keys.data));
  return tensor_over(memory, type, dims);
}

Napi::Object output_object(Napi::Env env, const PropertyKeys& keys, OrtValue*& value,
                           std::unordered_set<const void*>& wrapped) {
  const OrtApi& api = *runtime().api;
  Napi::Object result = Napi::Object::New(env);
  int is_tensor = 0;
  check(api.IsTensor(value, &is_tensor));
  result.Set(keys.is_tensor, Napi::Boolean::New(env, is_tensor != 0));
  if (!is_tensor) return result;
  const TypeAndShape shape = type_and_shape(value);
  const size_t count = element_count(shape.dims);
  result.Set(keys.type, Napi::Number::New(env, shape.type));
  result.Set(keys.dims, dims_array(env, shape.dims));
  if (shape.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
    result.Set(keys.data, string_output(env, value, count));
    return result;
  }
  const size_t bytes = byte_size(shape.type, count);
  if (bytes == 0 && count > 0)
    throw CodedError("ONEBIT_OUTPUT", "an output has an element type onebit-ep cannot return (" + std::to_string(shape.type) + ")");
  void* data = nullptr;
  if (bytes > 0) check(api.GetTensorMutableData(value, &data));
  // A second external ArrayBuffer over memory one already wraps would abort V8: an output aliasing
  // another of this run, or an input read in place, is copied.
  if (bytes == 0 || !wrapped.insert(data).second || find_output(data, 1)) {
    Napi::ArrayBuffer copy = Napi::ArrayBuffer::New(env, bytes);
    if (bytes > 0) std::memcpy(copy.Data(), data, bytes);
    result.Set(keys.data, copy);
    return result;
  }
  // The ArrayBuffer owns the OrtValue from here, with any later run that reads it as an input. V8
  // counts an external ArrayBuffer's bytes itself and collects it young: reporting them again
  // (napi_adjust_external_memory) set off a full mark-compact every few decode steps of SmolLM2
  // (4-15 ms each, ~1/8 of the decode time).
  SharedOutput owner = share_output(value, data, bytes);
  value = nullptr;
  auto* holder = new SharedOutput(std::move(owner));
  result.Set(keys.data, Napi::ArrayBuffer::New(env, data, bytes, [holder](Napi::Env, void*) { delete holder; }));
  return result;
}

}  // namespace onebit::node
