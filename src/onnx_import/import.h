// ONNX file -> ingot IR. The only part of ingot that sees protobuf.
#pragma once

#include <string>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

// Reads an .onnx file (and its external data files, located beside it). Every error names the
// file and, where there is one, the tensor, node or value at fault.
Expected<Model> load_onnx(const std::string& path);
struct MappedWeights;
// The same from bytes in memory; `path` is used in messages and to find external data;
// `mapped` resolves an engine file's weights without copying them.
Expected<Model> load_onnx_bytes(const std::string& bytes, const std::string& path,
                                const MappedWeights* mapped = nullptr);
// Reads a serialized TensorProto (the conformance suite's input_N.pb / output_N.pb).
Expected<Tensor> load_tensor_proto(const std::string& path);

}  // namespace ingot
