// Folds Cast(to = float32) into the ingot.FusedMatMul that produces its float16/bfloat16 input:
// the product is written in float32 directly (attribute output_dtype = 1). Precision conversion
// leaves exactly this at a half-precision model's float32 outputs (GPT-2's LM head: logits
// computed in float16, then a Cast), and a model exported in half precision with float32 outputs
// has it too. On the GPU this saves a kernel and a pass over the logits (the product is widened
// on its way out of scratch); the CPU writes its float32 accumulator directly, so its output is
// at least as exact as with the Cast. Runs after precision conversion (pipeline.cc).
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

class FuseOutputCast : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    int n = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      const Node& cast = ed.node(i);
      if (!ed.alive(i) || !is_op(cast, "Cast") || cast.inputs.empty() || cast.outputs.empty()) continue;
      if (cast.attrs.get_int("to", -1) != int64_t(DType::kFloat32)) continue;
      const ValueId half = cast.inputs[0], out = cast.outputs[0];
      if (half == kNoValue || out == kNoValue || !ed.only_feeds(half, i) || ed.read_by_subgraph(half)) continue;
      const int p = ed.producer(half);
      if (p < 0 || !ed.alive(p) || !is_op(ed.node(p), "FusedMatMul", "ingot")) continue;
      const Node& mm = ed.node(p);
      if (mm.outputs.size() != 1 || mm.attrs.get_int("output_dtype", 0) != 0) continue;
      // A residual or a LayerNorm (inputs 3 to 5) keeps Y in its dtype.
      bool epilogue_inputs = false;
      for (size_t k = 3; k < mm.inputs.size(); ++k) epilogue_inputs |= mm.inputs[k] != kNoValue;
      if (epilogue_inputs) continue;
      DType dt = model.graph.value(half).dtype;
      if (dt == DType::kUndefined && metas && size_t(half) < metas->size() && (*metas)[size_t(half)].known)
        dt = (*metas)[size_t(half)].dtype;
      if (!is_half(dt)) continue;
      Node fused = mm;
      Attribute float32;
      float32.kind = Attribute::Kind::kInt;
      float32.i = int64_t(DType::kFloat32);
      fused.attrs.set("output_dtype", float32);
      fused.outputs = {out};
      ctx.note("Cast '" + cast.name + "' folded into FusedMatMul '" + mm.name + "' (float32 output)");
      ed.remove_node(i);
      ed.remove_node(p);
      ed.add_node(std::move(fused));
      ++n;
    }
    ed.commit();
    return n;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_output_cast", FuseOutputCast);

}  // namespace ingot
