// Fuses each transformer block's residual add with the LayerNormalization that reads it:
//   s = Add(X, skip)          or   s = Add(Add(X, bias), skip)  (a bias fuse_linear left)
//   Y = LayerNormalization(s, gamma, beta, axis = -1)
// becomes ingot.SkipLayerNorm(X, skip, gamma, beta, bias) -> (Y, s), which computes each row's
// sum, statistics and normalised output while the row is in cache instead of writing s to
// memory and reading it back. s stays an output (output 1) only when something else reads it:
// pre-LN blocks (GPT-2) carry the sum on to the next residual; post-LN blocks (BERT) do not.
// X and skip may broadcast against each other (BERT's position embeddings are [1, S, H]).
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

class FuseSkipLayerNorm : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    if (!metas) return 0;  // the checks below need ranks and the hidden size
    auto meta = [&](ValueId v) -> const ValueMeta* {
      if (v == kNoValue || size_t(v) >= metas->size() || !(*metas)[size_t(v)].known) return nullptr;
      return &(*metas)[size_t(v)];
    };
    GraphEditor ed(model.graph);
    int rewrites = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "LayerNormalization")) continue;
      const Node& ln = ed.node(i);
      if (ln.inputs.size() < 2 || ln.inputs[0] == kNoValue || ln.inputs[1] == kNoValue || ln.outputs.empty()) continue;
      if (ln.attrs.get_int("stash_type", 1) != 1) continue;
      // Mean and InvStdDev outputs must be unread: the fused op does not produce them.
      bool stats_read = false;
      for (size_t k = 1; k < ln.outputs.size(); ++k) {
        ValueId o = ln.outputs[k];
        if (o != kNoValue && (!ed.consumers(o).empty() || ed.is_graph_output(o))) stats_read = true;
      }
      if (stats_read) continue;
      const ValueId s = ln.inputs[0];
      const ValueMeta* sm = meta(s);
      if (!sm || sm->dynamic || sm->shape.empty() || !dtype_is_float(sm->dtype)) continue;
      const int rank = int(sm->shape.size());
      const int64_t h = sm->shape.back();
      int64_t axis = ln.attrs.get_int("axis", -1);
      if (axis != -1 && axis != rank - 1) continue;
      // gamma/beta of rank <= 1, as the kernel takes them.
      bool params_ok = true;
      for (size_t k = 1; k < ln.inputs.size() && k < 3; ++k) {
        if (ln.inputs[k] == kNoValue) continue;
        const ValueMeta* pm = meta(ln.inputs[k]);
        params_ok &= pm && pm->shape.size() <= 1 && dtype_is_float(pm->dtype);
      }
      if (!params_ok) continue;
      int add = producer_if(ed, s, "Add");
      if (add < 0 || ed.node(add).inputs.size() != 2 || ed.node(add).inputs[0] == kNoValue ||
          ed.node(add).inputs[1] == kNoValue)
        continue;
      ValueId x = ed.node(add).inputs[0], skip = ed.node(add).inputs[1], bias = kNoValue;
      int bias_add = -1;
      // A bias Add on either operand: Add(m, c) with c a constant [H] that broadcasts nothing.
      for (int j = 0; j < 2 && bias_add < 0; ++j) {
        ValueId a = ed.node(add).inputs[size_t(j)];
        int p = producer_if(ed, a, "Add");
        if (p < 0 || !ed.only_feeds(a, add) || ed.node(p).inputs.size() != 2) continue;
        for (int k = 0; k < 2; ++k) {
          ValueId c = ed.node(p).inputs[size_t(k)], m = ed.node(p).inputs[size_t(1 - k)];
          const Tensor* t = ed.constant(c);
          const ValueMeta* mm = meta(m);
          const ValueMeta* am = meta(a);
          if (!t || t->rank() != 1 || t->numel() != h || !mm || !am || mm->shape != am->shape || m == kNoValue) continue;
          bias_add = p;
          x = m;
          bias = c;
          skip = ed.node(add).inputs[size_t(1 - j)];
          break;
        }
      }
      // The sum stays an output when anything besides this LayerNormalization reads it.
      const bool keep_sum = !ed.only_feeds(s, i);
      Node f;
      f.name = ln.name + "/skip_layer_norm";
      f.op_type = "SkipLayerNorm";
      f.domain = "ingot";
      f.inputs = {x, skip, ln.inputs[1], ln.inputs.size() > 2 ? ln.inputs[2] : kNoValue, bias};
      while (f.inputs.back() == kNoValue) f.inputs.pop_back();
      f.outputs = {ln.outputs[0], keep_sum ? s : kNoValue};
      if (!keep_sum) f.outputs.pop_back();
      Attribute eps, ax;
      eps.kind = Attribute::Kind::kFloat;
      eps.f = ln.attrs.get_float("epsilon", 1e-5f);
      ax.kind = Attribute::Kind::kInt;
      ax.i = -1;
      f.attrs.set("epsilon", eps);
      f.attrs.set("axis", ax);
      ed.remove_node(i);
      ed.remove_node(add);
      if (bias_add >= 0) ed.remove_node(bias_add);
      ed.add_node(std::move(f));
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_skip_layer_norm", FuseSkipLayerNorm);

}  // namespace ingot
