// fuse_attention: replaces each multi-head self-attention block (Q/K/V projections, head
// split, scale, mask, softmax, context, head merge, output projection) by one ingot.Attention
// node (contract at the top of src/backends/cpu/attention.cc).
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace ingot {

// Runs the pass. `log` (optional) receives one line per Softmax looked at: what was fused, or
// why the block was left alone. The registered pass prints these lines to stderr when the
// environment variable INGOT_LOG_PASSES is set.
Expected<int> fuse_attention(Model& model, PassContext& ctx, std::vector<std::string>* log);

}  // namespace ingot
