// convert_precision: turns a model's float32 computation into float16 or bfloat16 (what
// onnxconverter-common's float16 converter and TensorRT's mixed precision do), keeping the
// graph's interface and every op whose semantics break in half precision in float32.
//
// What changes:
//   - Every float32 value computed inside the graph becomes `target`, except values read or
//     written by nodes that stay float32 (below); those get Casts at their float boundaries,
//     one per value and direction, shared by all readers.
//   - Graph inputs and outputs keep their names and dtypes: a float32 input gets one Cast to
//     `target` after it; a float32 output computed in half precision is written by a Cast back
//     to float32 (the producer writes a new "<name>_fp16"/"_bf16" value).
//   - Float32 initializers read in half precision are converted in place when every reader
//     takes them converted, else a converted copy is added beside the float32 original.
//     Conversion saturates to the target's finite range and keeps tiny non-zero values
//     non-zero (see to_target in the .cc for why).
//   - Cast(to=FLOAT) whose output is converted becomes Cast(to=target); ConstantOfShape,
//     Constant and EyeLike get their float attributes converted; Cast(to=FLOAT) chains that
//     round-trip (target -> float32 -> target) and Casts to the dtype they already have are
//     removed (or become Identity where the output's name must survive).
// What stays float32 (the table in the .cc says why for each):
//   - ops in a small built-in list (Range, random generators, NonMaxSuppression, RoiAlign,
//     CumSum, quantization ops, signal ops, every ai.onnx.ml op), and ops in keep_fp32_ops;
//   - nodes with subgraphs (If, Loop, Scan): their bodies stay float32 and their inputs and
//     outputs get Casts at the node; values a body captures by name keep their float32 name;
//   - a few inputs of converted ops that are coordinates or ratios (Resize roi/scales,
//     Upsample scales, GridSample grid, OneHot depth) and LayerNormalization's statistics
//     outputs (their dtype is stash_type);
//   - shape arithmetic: nodes computing floats only from shapes and constants (no graph input
//     flows into them) whose result ends in an index-like use (a Cast to an integer type, a
//     Range, a Resize scale, ...). fp16 holds integers exactly only up to 2048, so a sequence
//     length computed through floats would otherwise round;
//   - nodes whose value dtypes cannot be determined (neither shape inference nor the
//     declared value info nor the simple dtype rules know them).
// Set INGOT_LOG_PASSES to have every node kept in float32 listed on stderr with its reason.
#pragma once

#include <set>
#include <string>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

struct PrecisionOptions {
  DType target = DType::kFloat16;  // kFloat16 or kBFloat16
  // Ops to keep in float32 besides the built-in list: "domain:op" matches that domain only
  // (":op" or "ai.onnx:op" for the default domain, "ingot:Attention"), "op" any domain.
  std::set<std::string> keep_fp32_ops;
  // Nodes that write a graph output compute it in float32. For bfloat16, whose 8-bit mantissa
  // cannot hold logits to 1e-2 once they pass 2 in magnitude, however exact the arithmetic.
  bool keep_output_producers_fp32 = false;
};

// Converts `model` in place. Returns how many float32 values of the original graph now have a
// half-precision version (converted in place, renamed, or copied/cast for half readers).
// Errors name the node.
Expected<int> convert_float_precision(Model& model, const PrecisionOptions& opts);

}  // namespace ingot
