// Removes Identity, inference-mode Dropout and Casts to the dtype their input already has
// (TorchScript's GPT-2 casts its float32 position embeddings to float32): their readers read
// the input directly. Output names never change: one that writes a graph output goes only when
// its input is a value its producer writes for it alone, and that producer then writes the
// output itself (an exported model's trailing Identity; the Identity precision conversion
// leaves at an output that --io-precision fp16 made float16).
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

// True when node i passes its first input through unchanged.
bool passes_through(const GraphEditor& ed, int i, const std::vector<ValueMeta>* metas) {
  const Node& node = ed.node(i);
  if (node.inputs.empty() || node.inputs[0] == kNoValue || node.outputs.empty() || node.outputs[0] == kNoValue)
    return false;
  if (is_op(node, "Identity")) return true;
  if (is_op(node, "Dropout")) {
    // Dropout is the identity unless training_mode may be true.
    auto training = node.inputs.size() < 3 ? std::optional<double>(0.0) : scalar_constant(ed, node.inputs[2]);
    return (node.inputs.size() < 3 || node.inputs[2] == kNoValue || (training && *training == 0.0)) &&
           (node.outputs.size() < 2 || node.outputs[1] == kNoValue || ed.consumers(node.outputs[1]).empty());
  }
  if (is_op(node, "Cast") && metas && size_t(node.inputs[0]) < metas->size()) {
    const ValueMeta& in = (*metas)[size_t(node.inputs[0])];
    return in.known && in.dtype != DType::kUndefined && int64_t(in.dtype) == node.attrs.get_int("to", -1);
  }
  return false;
}

class EliminateIdentity : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    int n = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      if (!passes_through(ed, i, metas)) continue;
      const Node& node = ed.node(i);
      ValueId out = node.outputs[0];
      if (ed.is_graph_output(out) || ed.read_by_subgraph(out)) continue;
      ed.replace_uses(out, node.inputs[0]);
      ed.remove_node(i);
      ++n;
    }
    ed.commit();
    // The graph outputs: in a fresh editor, whose producers are those of the graph as it is now.
    GraphEditor outs(model.graph);
    for (int i = 0; i < outs.num_nodes(); ++i) {
      if (!passes_through(outs, i, metas)) continue;
      const ValueId in = outs.node(i).inputs[0], out = outs.node(i).outputs[0];
      const int p = outs.producer(in);
      if (!outs.is_graph_output(out) || p < 0 || !outs.alive(p) || outs.consumers(in).size() != 1 ||
          outs.is_graph_output(in) || outs.read_by_subgraph(in))
        continue;
      ValueInfo& o = model.graph.value(out);
      if (o.dtype == DType::kUndefined) o.dtype = model.graph.value(in).dtype;
      if (!o.shape) o.shape = model.graph.value(in).shape;
      outs.remove_node(i);
      outs.set_output(p, in, out);
      ++n;
    }
    outs.commit();
    return n;
  }
};

}  // namespace

INGOT_REGISTER_PASS("eliminate_identity", EliminateIdentity);

}  // namespace ingot
