#include "onnx_import/tensor_proto.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/dispatch.h"
#include "onnx_import/export.h"

namespace ingot {
namespace {

namespace fs = std::filesystem;

std::string tensor_desc(const onnx::TensorProto& tp, const std::string& where) {
  return tp.name().empty() ? where : where + ": tensor '" + tp.name() + "'";
}

Status read_external(const onnx::TensorProto& tp, const std::string& dir, const std::string& where,
                     Tensor& t) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = 0;
      const char* b = kv.value().data();
      auto [end, ec] = std::from_chars(b, b + kv.value().size(), v);
      if (ec != std::errc() || end != b + kv.value().size() || v < 0) {
        return invalid_model(tensor_desc(tp, where) + ": external data " + kv.key() + " '" + kv.value() +
                             "' is not a non-negative integer");
      }
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  std::string desc = tensor_desc(tp, where);
  if (location.empty()) return invalid_model(desc + ": external data without a location");
  fs::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos) {
    return invalid_model(desc + ": external data location '" + location +
                         "' must be a relative path inside the model's directory");
  }
  fs::path file = fs::path(dir.empty() ? "." : dir) / rel;
  std::ifstream f(file, std::ios::binary);
  if (!f) return not_found(desc + ": external data file '" + file.string() + "' is missing");
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  int64_t need = int64_t(t.nbytes());
  if (length >= 0 && length != need) {
    return invalid_model(desc + ": external data length " + std::to_string(length) + " does not match " +
                         std::to_string(need) + " bytes of a " + dtype_name(t.dtype()) + " tensor of shape " +
                         shape_str(t.shape()));
  }
  if (offset < 0 || offset + need > size) {
    return invalid_model(desc + ": external data file '" + file.string() + "' has " + std::to_string(size) +
                         " bytes, expected at least " + std::to_string(offset + need));
  }
  f.seekg(offset);
  f.read(static_cast<char*>(t.raw()), need);
  if (!f) return io_error(desc + ": reading external data file '" + file.string() + "' failed");
  return Status::ok();
}

// Typed repeated fields: int32_data holds every type of at most 32 bits (fp16/bf16 as bits).
template <class T, class Field>
Status copy_field(const Field& field, Tensor& t, const std::string& desc) {
  if (int64_t(field.size()) != t.numel()) {
    return invalid_model(desc + ": has " + std::to_string(field.size()) + " values, its shape " +
                         shape_str(t.shape()) + " needs " + std::to_string(t.numel()));
  }
  T* out = t.data<T>();
  int64_t i = 0;
  for (auto v : field) {
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      out[i++].bits = uint16_t(v);
    } else {
      out[i++] = T(v);
    }
  }
  return Status::ok();
}

}  // namespace

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& dir,
                                   const std::string& where, const MappedWeights* mapped) {
  DType dt = DType(tp.data_type());
  std::string desc = tensor_desc(tp, where);
  if (dt == DType::kString) return unsupported(desc + ": string tensors are not supported");
  if (!dtype_is_supported(dt)) {
    return unsupported(desc + ": element type " + dtype_name(dt) + " is not supported");
  }
  if (tp.has_segment()) return unsupported(desc + ": segmented tensors are not supported");
  Shape shape;
  for (int64_t d : tp.dims()) {
    if (d < 0) return invalid_model(desc + ": negative dimension " + std::to_string(d));
    shape.push_back(d);
  }
  if (mapped && tp.data_location() == onnx::TensorProto::EXTERNAL) {
    uint64_t offset = 0, length = 0;
    bool in_weights = false;
    for (const auto& kv : tp.external_data()) {
      if (kv.key() == "location") in_weights = kv.value() == kEngineWeightsLocation;
      else if (kv.key() == "offset") offset = std::strtoull(kv.value().c_str(), nullptr, 10);
      else if (kv.key() == "length") length = std::strtoull(kv.value().c_str(), nullptr, 10);
    }
    if (in_weights) {
      uint64_t need = uint64_t(shape_numel(shape)) * dtype_size(dt);
      if (length != need || offset > mapped->size || need > mapped->size - offset) {
        return invalid_model(desc + ": weights at offset " + std::to_string(offset) + " (" + std::to_string(length) +
                             " bytes) lie outside the engine's weights section of " + std::to_string(mapped->size) +
                             " bytes: the engine file is corrupt");
      }
      return Tensor::wrap(dt, shape, const_cast<std::byte*>(mapped->base + offset), mapped->owner);
    }
  }
  Tensor t(dt, shape);
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    INGOT_RETURN_IF_ERROR(read_external(tp, dir, where, t));
    return t;
  }
  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != t.nbytes()) {
      return invalid_model(desc + ": raw data has " + std::to_string(tp.raw_data().size()) + " bytes, a " +
                           dtype_name(dt) + " tensor of shape " + shape_str(shape) + " needs " +
                           std::to_string(t.nbytes()));
    }
    if (t.nbytes()) std::memcpy(t.raw(), tp.raw_data().data(), t.nbytes());
    return t;
  }
  Status st;
  switch (dt) {
    case DType::kFloat32: st = copy_field<float>(tp.float_data(), t, desc); break;
    case DType::kFloat64: st = copy_field<double>(tp.double_data(), t, desc); break;
    case DType::kInt64: st = copy_field<int64_t>(tp.int64_data(), t, desc); break;
    case DType::kUInt64: st = copy_field<uint64_t>(tp.uint64_data(), t, desc); break;
    case DType::kUInt32: st = copy_field<uint32_t>(tp.uint64_data(), t, desc); break;
    case DType::kInt32: st = copy_field<int32_t>(tp.int32_data(), t, desc); break;
    case DType::kInt16: st = copy_field<int16_t>(tp.int32_data(), t, desc); break;
    case DType::kUInt16: st = copy_field<uint16_t>(tp.int32_data(), t, desc); break;
    case DType::kInt8: st = copy_field<int8_t>(tp.int32_data(), t, desc); break;
    case DType::kUInt8: st = copy_field<uint8_t>(tp.int32_data(), t, desc); break;
    case DType::kBool: st = copy_field<bool>(tp.int32_data(), t, desc); break;
    case DType::kFloat16: st = copy_field<float16>(tp.int32_data(), t, desc); break;
    case DType::kBFloat16: st = copy_field<bfloat16>(tp.int32_data(), t, desc); break;
    default: return unsupported(desc + ": element type " + dtype_name(dt) + " is not supported");
  }
  if (!st.is_ok()) return st;
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& tp) {
  tp.set_name(name);
  tp.set_data_type(int32_t(t.dtype()));
  for (int64_t d : t.shape()) tp.add_dims(d);
  tp.set_raw_data(t.raw(), t.nbytes());
}

}  // namespace ingot
