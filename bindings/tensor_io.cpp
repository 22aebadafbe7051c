// SPDX-License-Identifier: Apache-2.0
#include "tensor_io.h"

#include <algorithm>
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

// The most bytes one JS ArrayBuffer holds here (Node 20: 4 GiB); wrapping more fails inside
// node-addon-api in a way that freed our finalizer's data twice.
constexpr size_t kMaxArrayBufferBytes = size_t{1} << 32;

// The dims in a JS array, none negative, that fit a JS ArrayBuffer.
std::vector<int64_t> read_dims(const std::string& what, const char* code, const Napi::Array& array) {
  std::vector<int64_t> dims(array.Length());
  for (uint32_t i = 0; i < dims.size(); ++i) {
    dims[i] = array.Get(i).As<Napi::Number>().Int64Value();
    if (dims[i] < 0) throw CodedError(code, what + " has a negative dimension");
  }
  if (!fits_array_buffer(dims)) throw CodedError(code, what + kTooManyElements);
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

// A tensor in memory ORT's default allocator owns; `data`, if given, receives its bytes' address
// (the caller then fills them).
OrtValue* ort_owned_tensor(ONNXTensorElementDataType type, const std::vector<int64_t>& dims, void** data = nullptr) {
  const OrtApi& api = *runtime().api;
  OrtAllocator* allocator = nullptr;
  check(api.GetAllocatorWithDefaultOptions(&allocator));
  OrtValue* value = nullptr;
  check(api.CreateTensorAsOrtValue(allocator, dims.data(), dims.size(), type, &value));
  OrtStatus* status = data != nullptr ? api.GetTensorMutableData(value, data) : nullptr;
  if (status != nullptr) api.ReleaseValue(value);
  check(status);
  return value;
}

OrtValue* string_input(const std::string& name, const std::vector<int64_t>& dims, const Napi::Value& data) {
  const OrtApi& api = *runtime().api;
  if (!data.IsArray())
    throw CodedError("ONEBIT_INPUT", "input '" + name + "' is a string tensor: its data must be a string array");
  Napi::Array array = data.As<Napi::Array>();
  if (array.Length() != element_count(dims))
    throw CodedError("ONEBIT_INPUT", "input '" + name + "' has " + std::to_string(array.Length()) +
                                         " strings for a shape of " + std::to_string(element_count(dims)) +
                                         " elements");
  std::vector<std::string> strings(array.Length());
  std::vector<const char*> pointers(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    const Napi::Value element = array.Get(i);
    if (!element.IsString())
      throw CodedError("ONEBIT_INPUT", "input '" + name + "' is a string tensor, but its element " + std::to_string(i) +
                                           " is not a string");
    strings[i] = element.As<Napi::String>().Utf8Value();
    pointers[i] = strings[i].c_str();
  }
  OrtValue* value = ort_owned_tensor(ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, dims);
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

// A tensor as errors name it ("input 'x'"), put together only for an error: a run names 121
// values a SmolLM2 decode step, and a string each cost a heap allocation.
struct TensorName {
  const char* role;  // "input", "pre-allocated output"
  const std::string& name;
  const char* suffix = "";
  std::string text() const { return std::string(role) + " '" + name + "'" + suffix; }
};

size_t element_bytes(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      return 1;
    case napi_int16_array:
    case napi_uint16_array:
      return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      return 4;
    default:  // float64, bigint64, biguint64
      return 8;
  }
}

// The bytes of a typed array that fit `type` and `dims`, or a CodedError(code) naming `what`.
ByteRange typed_array_bytes(const TensorName& what, const char* code, ONNXTensorElementDataType type,
                            const std::vector<int64_t>& dims, const Napi::Value& data) {
  const size_t expected = byte_size(type, element_count(dims));
  if (expected == 0 && element_count(dims) > 0)
    throw CodedError(code, what.text() + " has an element type onebit-ep cannot pass (" + std::to_string(type) + ")");
  if (!data.IsTypedArray()) throw CodedError(code, what.text() + " must carry its data in a typed array");
  // The buffer as napi_get_typedarray_info gives it: an ArrayBuffer or a SharedArrayBuffer (which
  // Napi::ArrayBuffer::Data() refuses with a bare "Invalid argument").
  napi_typedarray_type array_type = napi_int8_array;
  size_t length = 0;
  napi_value buffer = nullptr;
  void* source = nullptr;
  bool detached = false;
  if (napi_get_typedarray_info(data.Env(), data, &array_type, &length, &source, &buffer, nullptr) != napi_ok ||
      napi_is_detached_arraybuffer(data.Env(), buffer, &detached) != napi_ok)
    throw CodedError(code, what.text() + ": its typed array cannot be read");
  if (detached)
    throw CodedError(code, what.text() +
                               " is backed by a detached ArrayBuffer (transferred away, e.g. by postMessage or "
                               "structuredClone): keep the data in this thread until run() returns, or pass a copy");
  const size_t byte_length = length * element_bytes(array_type);
  if (byte_length != expected)
    throw CodedError(code, what.text() + " has " + std::to_string(byte_length) +
                               " bytes of data, but its type and shape need " + std::to_string(expected));
  return {static_cast<const uint8_t*>(source), expected};
}

// An external ArrayBuffer over `data`, the memory of `value`, which it owns once this returns, with
// any later run that reads or writes that memory in place. V8 counts an external ArrayBuffer's bytes
// itself and collects it young: reporting them again (napi_adjust_external_memory) set off a full
// mark-compact every few decode steps, a large share of the decode time (BENCHMARKS.md).
Napi::ArrayBuffer owned_array_buffer(Napi::Env env, OrtValue* value, void* data, size_t bytes) {
  if (bytes > kMaxArrayBufferBytes)  // value stays the caller's
    throw CodedError("ONEBIT_OUTPUT",
                     "a tensor of " + std::to_string(bytes) + " bytes: more than a JS ArrayBuffer holds (4 GiB)");
  auto* holder = new SharedOutput(share_output(value, data, bytes));
  return Napi::ArrayBuffer::New(env, data, bytes, [holder](Napi::Env, void*) { delete holder; });
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// A tensor over `memory` (one of no elements is ORT's own: there is nothing to point at).
OrtValue* tensor_over(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims) {
  if (memory.size == 0) return ort_owned_tensor(type, dims);
  OrtValue* value = nullptr;
  check(runtime().api->CreateTensorWithDataAsOrtValue(cpu_memory(), const_cast<uint8_t*>(memory.begin), memory.size,
                                                      dims.data(), dims.size(), type, &value));
  return value;
}

}  // namespace

bool fits_array_buffer(const std::vector<int64_t>& dims) {
  uint64_t count = 1;
  bool empty = false, too_many = false;
  for (int64_t d : dims) {
    empty = empty || d == 0;
    too_many = __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) || too_many;
  }
  return empty || (!too_many && count <= kMaxArrayBufferBytes);
}

namespace {

// An OrtValue over `memory` if it is ours (an earlier output, allocate_tensor's): `kept`'s when it
// serves, else a new one, kept there for the runs after this one; its owner added to `borrowed`.
// Null for memory that is not ours, and for none at all (nothing to point at).
RunValue value_over_ours(const ByteRange& memory, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                         KeptValue& kept, std::vector<SharedOutput>& borrowed) {
  if (memory.size == 0) return nullptr;
  if (RunValue value = kept.reuse(memory, type, dims, borrowed)) return value;
  SharedOutput owner = find_output(memory.begin, memory.size);
  if (!owner) return nullptr;
  RunValue value = run_value(tensor_over(memory, type, dims));
  kept.keep(memory, type, dims, owner, value);
  borrowed.push_back(std::move(owner));
  return value;
}

}  // namespace

RunValue input_value(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                     const Napi::Value& data, KeptValue& kept, std::vector<SharedOutput>& borrowed) {
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) return run_value(string_input(name, dims, data));
  const ByteRange memory = typed_array_bytes({"input", name}, "ONEBIT_INPUT", type, dims, data);
  // Memory of ours (a KV cache fed back) is read in place; `borrowed` keeps it alive through the run
  // even if the caller transfers or drops the buffer meanwhile.
  if (RunValue value = value_over_ours(memory, type, dims, kept, borrowed)) return value;
  // Any other buffer is copied now, on the JS thread: the run reads it on a worker thread, and the
  // caller may transfer, detach or overwrite its buffer meanwhile (or share it with other threads).
  if (memory.size == 0) return run_value(ort_owned_tensor(type, dims));
  void* target = nullptr;
  RunValue value = run_value(ort_owned_tensor(type, dims, &target));
  std::memcpy(target, memory.begin, memory.size);
  return value;
}

RunValue preallocated_output(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                             const Napi::Value& data, bool in_place, std::vector<ByteRange>& taken, KeptValue& kept,
                             std::vector<SharedOutput>& borrowed) {
  const TensorName what{"pre-allocated output", name};
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    throw CodedError("ONEBIT_INPUT", what.text() + ": a string tensor cannot be pre-allocated (pass null for it)");
  const ByteRange memory = typed_array_bytes(what, "ONEBIT_INPUT", type, dims, data);
  for (const ByteRange& other : taken)
    if (memory.overlaps(other))
      throw CodedError(
          "ONEBIT_INPUT",
          what.text() + " shares memory with another pre-allocated output of this run: give each its own buffer");
  taken.push_back(memory);
  return in_place ? value_over_ours(memory, type, dims, kept, borrowed) : nullptr;
}

namespace {

// What is wrong with an output whose pre-allocated tensor is not what the run computes, over either
// memory. (Text, not an error: moving a std::runtime_error needs a newer libstdc++ than ORT's.)
std::string preallocated_mismatch(const std::string& name, const std::string& computed, const std::string& given,
                                  bool other_type) {
  return "output '" + name + "' has shape " + computed + " in this run, but its pre-allocated tensor has " + given +
         (other_type ? " and another element type" : "") +
         ": pre-allocate it with the output's shape for this run, or pass null for it";
}

// "{3,64}" at `from` in ORT's text as "[3, 64]"; empty if it is not there.
std::string ort_shape_at(const std::string& text, size_t from) {
  if (from >= text.size() || text[from] != '{') return {};
  const size_t end = text.find('}', from);
  if (end == std::string::npos) return {};
  std::string shape = "[";
  for (size_t i = from + 1; i < end; ++i) {
    if (text[i] == ',')
      shape += ", ";
    else if ((text[i] >= '0' && text[i] <= '9') || text[i] == '-')
      shape += text[i];
    else
      return {};
  }
  return shape + "]";
}

}  // namespace

std::optional<std::string> preallocated_refusal(const std::string& ort_message,
                                                const std::vector<const std::string*>& in_place) {
  static const std::string output = "The output OrtValue provided for output '", given = " has shape ",
                           computed = " but the computed output shape for this run is ";
  const size_t at = ort_message.find(output);
  if (at == std::string::npos) return std::nullopt;
  const size_t name_begin = at + output.size(), name_end = ort_message.find('\'', name_begin);
  if (name_end == std::string::npos) return std::nullopt;
  const std::string name = ort_message.substr(name_begin, name_end - name_begin);
  if (std::none_of(in_place.begin(), in_place.end(), [&](const std::string* n) { return *n == name; }))
    return std::nullopt;
  const size_t given_at = ort_message.find(given, name_end);
  const size_t computed_at = given_at == std::string::npos ? given_at : ort_message.find(computed, given_at);
  if (computed_at == std::string::npos) return std::nullopt;
  const std::string given_shape = ort_shape_at(ort_message, given_at + given.size());
  const std::string computed_shape = ort_shape_at(ort_message, computed_at + computed.size());
  if (given_shape.empty() || computed_shape.empty()) return std::nullopt;
  return preallocated_mismatch(name, computed_shape, given_shape, false);
}

void fill_preallocated(const std::string& name, ONNXTensorElementDataType type, const std::vector<int64_t>& dims,
                       const Napi::Value& data, const OrtValue* value) {
  const TypeAndShape computed = type_and_shape(value);
  if (computed.type != type || computed.dims != dims)
    throw CodedError("ONEBIT_INPUT",
                     preallocated_mismatch(name, dims_text(computed.dims), dims_text(dims), computed.type != type));
  // Read again: the buffer may have been detached or resized while the run was in flight.
  const ByteRange memory =
      typed_array_bytes({"pre-allocated output", name, " (after the run)"}, "ONEBIT_INPUT", type, dims, data);
  if (memory.size == 0) return;
  void* source = nullptr;
  check(runtime().api->GetTensorMutableData(const_cast<OrtValue*>(value), &source));
  std::memcpy(const_cast<uint8_t*>(memory.begin), source, memory.size);
}

Napi::ArrayBuffer allocate_tensor(Napi::Env env, ONNXTensorElementDataType type, const Napi::Array& dims_array) {
  const std::vector<int64_t> dims = read_dims("allocateTensor: the tensor", "ONEBIT_INPUT", dims_array);
  const size_t bytes = byte_size(type, element_count(dims));
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING || (bytes == 0 && element_count(dims) > 0))
    throw CodedError("ONEBIT_INPUT",
                     "allocateTensor: element type " + std::to_string(type) + " is not one onebit-ep allocates");
  if (bytes > kMaxArrayBufferBytes)
    throw CodedError("ONEBIT_INPUT",
                     "allocateTensor: " + std::to_string(bytes) + " bytes is more than a JS ArrayBuffer holds (4 GiB)");
  if (bytes == 0) return Napi::ArrayBuffer::New(env, 0);
  void* data = nullptr;
  OrtValue* value = ort_owned_tensor(type, dims, &data);
  std::memset(data, 0, bytes);
  return owned_array_buffer(env, value, data, bytes);
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
    throw CodedError("ONEBIT_OUTPUT",
                     "an output has an element type onebit-ep cannot return (" + std::to_string(shape.type) + ")");
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
  result.Set(keys.data, owned_array_buffer(env, value, data, bytes));
  value = nullptr;
  return result;
}

}  // namespace onebit::node
