// onnx::TensorProto <-> ingot::Tensor, external data included.
#pragma once

#include <memory>
#include <string>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "onnx/onnx_pb.h"

namespace ingot {

// Weights already in memory (an engine file's mapped weights section): external data at the
// engine-weights location is viewed in place, not copied.
struct MappedWeights {
  const std::byte* base = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;  // keeps the mapping alive
};

// `dir` is where external data files are looked up; `where` begins messages: the model's path
// (the tensor's name follows), or the model's path and the node's attribute holding the tensor.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& dir,
                                   const std::string& where, const MappedWeights* mapped = nullptr);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& tp);

}  // namespace ingot
