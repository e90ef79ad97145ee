// Turns every Conv into one ingot.FusedConv node, absorbing what follows it when it can:
//   Conv -> [Add(., Z) with Z of the conv output's shape] -> [activation]
// where the activation is Relu, LeakyRelu, Sigmoid, HardSwish, HardSigmoid or Clip with
// constant bounds. ResNet's `relu(conv(x) + identity)` becomes one node. A Conv with nothing
// to absorb still becomes a FusedConv: its kernel packs the weights once, which is the main
// saving over the plain Conv kernel.
//
// The fused node takes over the ValueId of the last node it replaces (graph outputs keep their
// names) and every intermediate it swallows must feed only the next node of the chain.
//
// Then layouts: a FusedConv output read only by FusedConvs (as X or Z) becomes channels-last
// (shape [N, H, W, C], the *_channels_last attributes), so a chain of convolutions (a ResNet
// body) runs in the layout oneDNN's brgemm convolutions want instead of converting every
// activation from and back to NCHW around every convolution.
#include <limits>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

Attribute floats_attr(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}
Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
Attribute string_attr(std::string s) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(s);
  return a;
}

// The activation `n` computes as (name, params) for FusedConv, or false when it is not one
// FusedConv can apply (Clip with non-constant or inverted bounds, an unknown op).
bool activation_of(const GraphEditor& ed, const Node& n, int64_t opset, std::string& name,
                   std::vector<float>& params) {
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return false;
  const std::string& op = n.op_type;
  params.clear();
  if (op == "Relu" || op == "Sigmoid" || op == "HardSwish") {
    name = op;
    return n.inputs.size() == 1;
  }
  if (op == "LeakyRelu") {
    name = op;
    params = {n.attrs.get_float("alpha", 0.01f)};
    return n.inputs.size() == 1;
  }
  if (op == "HardSigmoid") {
    name = op;
    params = {n.attrs.get_float("alpha", 0.2f), n.attrs.get_float("beta", 0.5f)};
    return n.inputs.size() == 1;
  }
  if (op == "Clip") {
    constexpr float kMax = std::numeric_limits<float>::max();
    float lo = -kMax, hi = kMax;
    if (opset < 11) {
      if (n.inputs.size() != 1) return false;
      lo = n.attrs.get_float("min", -kMax);
      hi = n.attrs.get_float("max", kMax);
    } else {
      if (n.inputs.size() > 3) return false;
      auto bound = [&](size_t i, float& out) {
        if (n.inputs.size() <= i || n.inputs[i] == kNoValue) return true;
        auto v = scalar_constant(ed, n.inputs[i]);
        if (!v) return false;
        out = float(std::max<double>(-kMax, std::min<double>(kMax, *v)));
        return true;
      };
      if (!bound(1, lo) || !bound(2, hi)) return false;
    }
    // min > max makes ONNX's Clip output max everywhere; not worth a special case.
    if (!(lo <= hi)) return false;
    name = op;
    params = {lo, hi};
    return true;
  }
  return false;
}

class FuseConvActivation : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    int64_t opset = model.opset("");
    GraphEditor ed(model.graph);
    int fused = 0;
    int n = ed.num_nodes();  // nodes added below are FusedConv: no need to visit them
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "Conv")) continue;
      if (fuse(ed, i, metas, opset)) ++fused;
    }
    ed.commit();
    if (fused) fused += channels_last_edges(model.graph);
    return fused;
  }

 private:
  static bool same_shape(const std::vector<ValueMeta>* metas, ValueId a, ValueId b) {
    if (!metas || size_t(a) >= metas->size() || size_t(b) >= metas->size()) return false;
    const ValueMeta& ma = (*metas)[size_t(a)];
    const ValueMeta& mb = (*metas)[size_t(b)];
    return ma.known && mb.known && ma.dtype == mb.dtype && ma.shape == mb.shape;
  }

  // Marks FusedConv -> FusedConv edges channels-last; returns how many outputs it changed.
  static int channels_last_edges(Graph& g) {
    GraphEditor ed(g);
    int changed = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      const Node& f = ed.node(i);
      if (!is_op(f, "FusedConv", "ingot") || f.outputs.size() != 1 || f.attrs.get_int("y_channels_last", 0)) continue;
      ValueId v = f.outputs[0];
      if (v == kNoValue || ed.is_graph_output(v) || ed.read_by_subgraph(v)) continue;
      const auto& readers = ed.consumers(v);
      bool ok = !readers.empty();
      for (int c : readers) {
        const Node& n = ed.node(c);
        if (!is_op(n, "FusedConv", "ingot")) ok = false;
        for (size_t k = 0; ok && k < n.inputs.size(); ++k)
          if (n.inputs[k] == v && k != 0 && k != 3) ok = false;
      }
      if (!ok) continue;
      ed.node(i).attrs.set("y_channels_last", int_attr(1));
      for (int c : readers) {
        Node& n = ed.node(c);
        if (n.inputs[0] == v) n.attrs.set("x_channels_last", int_attr(1));
        if (n.inputs.size() > 3 && n.inputs[3] == v) n.attrs.set("z_channels_last", int_attr(1));
      }
      // A declared shape must describe the new layout: [N, C, spatial...] -> [N, spatial..., C].
      auto& decl = g.value(v).shape;
      if (decl && decl->size() >= 3) {
        Dim c = (*decl)[1];
        decl->erase(decl->begin() + 1);
        decl->push_back(c);
      }
      ++changed;
    }
    return changed;
  }

  static bool fuse(GraphEditor& ed, int conv_idx, const std::vector<ValueMeta>* metas, int64_t opset) {
    const Node& conv = ed.node(conv_idx);
    if (conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.outputs.size() != 1) return false;
    if (conv.inputs[0] == kNoValue || conv.inputs[1] == kNoValue || conv.outputs[0] == kNoValue) return false;
    std::vector<int> absorbed;
    ValueId cur = conv.outputs[0];
    ValueId z = kNoValue;

    // Residual: Add(conv, Z) with Z exactly the conv output's shape (no broadcasting), so the
    // sum post-op can accumulate Z in place.
    int add = sole_consumer_if(ed, cur, "Add");
    if (add >= 0) {
      const Node& a = ed.node(add);
      ValueId other = other_input(a, cur);
      if (other != kNoValue && other != cur && a.outputs.size() == 1 && same_shape(metas, other, cur) &&
          same_shape(metas, a.outputs[0], cur)) {
        z = other;
        absorbed.push_back(add);
        cur = a.outputs[0];
      }
    }

    std::string act;
    std::vector<float> params;
    const auto& readers = ed.consumers(cur);
    if (readers.size() == 1 && ed.only_feeds(cur, readers[0])) {
      const Node& a = ed.node(readers[0]);
      if (!a.inputs.empty() && a.inputs[0] == cur && activation_of(ed, a, opset, act, params)) {
        absorbed.push_back(readers[0]);
        cur = a.outputs[0];
      } else {
        act.clear();
      }
    }

    Node f;
    f.name = conv.name;
    f.op_type = "FusedConv";
    f.domain = "ingot";
    f.attrs = conv.attrs;
    f.attrs.set("activation", string_attr(act));
    f.attrs.set("activation_params", floats_attr(params));
    f.inputs = {conv.inputs[0], conv.inputs[1], conv.inputs.size() > 2 ? conv.inputs[2] : kNoValue};
    if (z != kNoValue) f.inputs.push_back(z);
    while (f.inputs.back() == kNoValue) f.inputs.pop_back();
    f.outputs = {cur};
    ed.remove_node(conv_idx);
    for (int a : absorbed) ed.remove_node(a);
    ed.add_node(std::move(f));
    return true;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_conv_activation", FuseConvActivation);

}  // namespace ingot
