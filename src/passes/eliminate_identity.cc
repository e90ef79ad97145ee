// Removes Identity, inference-mode Dropout and Casts to the dtype their input already has
// (TorchScript's GPT-2 casts its float32 position embeddings to float32): their readers read
// the input directly. A node whose output is a graph output stays, so output names never change.
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

class EliminateIdentity : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    int n = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      const Node& node = ed.node(i);
      bool identity = is_op(node, "Identity");
      // Dropout is the identity unless training_mode may be true.
      auto training = node.inputs.size() < 3 ? std::optional<double>(0.0) : scalar_constant(ed, node.inputs[2]);
      bool dropout = is_op(node, "Dropout") && (node.inputs.size() < 3 || node.inputs[2] == kNoValue ||
                                                (training && *training == 0.0)) &&
                     (node.outputs.size() < 2 || node.outputs[1] == kNoValue || ed.consumers(node.outputs[1]).empty());
      if (!identity && !dropout && is_op(node, "Cast") && !node.inputs.empty() && node.inputs[0] != kNoValue && metas &&
          size_t(node.inputs[0]) < metas->size()) {
        const ValueMeta& in = (*metas)[size_t(node.inputs[0])];
        identity = in.known && in.dtype != DType::kUndefined && int64_t(in.dtype) == node.attrs.get_int("to", -1);
      }
      if (!(identity || dropout) || node.inputs.empty() || node.inputs[0] == kNoValue) continue;
      ValueId out = node.outputs[0];
      if (ed.is_graph_output(out) || ed.read_by_subgraph(out)) continue;
      ed.replace_uses(out, node.inputs[0]);
      ed.remove_node(i);
      ++n;
    }
    ed.commit();
    return n;
  }
};

}  // namespace

INGOT_REGISTER_PASS("eliminate_identity", EliminateIdentity);

}  // namespace ingot
