// onnx::TensorProto <-> ingot::Tensor, external data included.
#pragma once

#include <string>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "onnx/onnx_pb.h"

namespace ingot {

// `dir` is where external data files are looked up; `model_path` is used in messages.
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& dir,
                                   const std::string& model_path);
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& tp);

}  // namespace ingot
