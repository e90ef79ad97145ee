// retype_float_io: the engine's float32 inputs and outputs become float16 (`ingot build
// --io-precision fp16`, as trtexec's --inputIOFormats/--outputIOFormats=fp16): half the bytes
// to copy in and out, and an fp16 engine no longer widens its results (GPT-2's 50257-wide
// logits) on the way out. The computation is the model's: each retyped input gets a Cast to
// float32 in front of its readers and each retyped output is a Cast of the float32 value the
// model computed. Precision conversion, run after this, finds those Casts redundant in an
// fp16 engine and removes them (the output's producer then writes it directly); an fp32 or
// bf16 engine keeps them as the one rounding at the boundary.
//
// Names never change. A value read by name inside a subgraph (If/Loop/Scan) cannot be
// retyped: error naming it.
#pragma once

#include <string>
#include <vector>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

struct RetypedIo {
  std::vector<std::string> inputs, outputs;  // the names now float16, in graph order
};

// `io` must be kFloat16. Inputs and outputs of other dtypes are left as they are.
Expected<RetypedIo> retype_float_io(Model& model, DType io);

}  // namespace ingot
