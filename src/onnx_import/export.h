// ingot IR -> ONNX ModelProto, for engine files: the optimized graph (ingot-domain fused ops
// included) is stored as ONNX, with every initializer's bytes placed in the engine file's
// weights section and referenced as external data at location kEngineWeightsLocation.
#pragma once

#include <functional>
#include <string>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

inline constexpr const char* kEngineWeightsLocation = "@ingot-weights";

// Receives an initializer's bytes, returns its offset in the weights section.
using WeightSink = std::function<uint64_t(const Tensor& t)>;

// Serializes `m` (its graph, opsets and metadata) to ModelProto bytes.
Expected<std::string> serialize_model(const Model& m, const WeightSink& weights);

}  // namespace ingot
