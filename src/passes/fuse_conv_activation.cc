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
// Then layouts: a FusedConv output becomes channels-last (shape [N, spatial..., C]) when every
// reader accepts that layout, so a chain of convolutions (a ResNet body) runs in the layout
// oneDNN's brgemm convolutions and cuDNN's tensor-core kernels want instead of converting every
// activation from and back to NCHW around every convolution. Readers that accept it:
//   - a FusedConv as X or Z (attributes x_channels_last / z_channels_last; the producer gets
//     y_channels_last);
//   - a MaxPool / AveragePool without an Indices output, which then runs channels-last on both
//     sides (attribute channels_last) when its own output's readers accept it in turn: ResNet's
//     stem conv -> MaxPool -> convs stays channels-last throughout;
//   - a GlobalAveragePool / GlobalMaxPool (attribute x_channels_last; its [N, C, 1, ...] output
//     is the same either way): ResNet's head.
// Never a graph output or a value a subgraph reads: their layout is the model's contract.
#include <limits>
#include <optional>

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

  // Makes FusedConv outputs channels-last where every reader accepts it; returns how many values
  // changed layout (conv outputs and the outputs of the pools they pass through).
  static int channels_last_edges(Graph& g) {
    GraphEditor ed(g);
    int changed = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      Node& f = ed.node(i);
      if (!is_op(f, "FusedConv", "ingot") || f.outputs.size() != 1 || f.attrs.get_int("y_channels_last", 0)) continue;
      if (!readers_accept_channels_last(ed, f.outputs[0])) continue;
      f.attrs.set_int("y_channels_last", 1);
      changed += make_channels_last(ed, f.outputs[0]);
    }
    return changed;
  }

  static bool is_global_pool(const Node& n) { return is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool"); }

  // MaxPool / AveragePool whose only output is Y (the Indices layout is defined on NCHW).
  static bool is_window_pool(const Node& n) {
    if (!is_op(n, "MaxPool") && !is_op(n, "AveragePool")) return false;
    return n.inputs.size() == 1 && !n.outputs.empty() && n.outputs[0] != kNoValue &&
           (n.outputs.size() == 1 || (n.outputs.size() == 2 && n.outputs[1] == kNoValue));
  }

  static bool readers_accept_channels_last(const GraphEditor& ed, ValueId v) {
    if (v == kNoValue || ed.is_graph_output(v) || ed.read_by_subgraph(v)) return false;
    const auto& readers = ed.consumers(v);
    if (readers.empty()) return false;
    for (int c : readers)
      if (!accepts_channels_last(ed, ed.node(c), v)) return false;
    return true;
  }

  // Whether `n` can read v channels-last at every input it reads v at (a window pool only if
  // its own output can then be channels-last too).
  static bool accepts_channels_last(const GraphEditor& ed, const Node& n, ValueId v) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] != v) continue;
      if (is_op(n, "FusedConv", "ingot")) {
        if (k != 0 && k != 3) return false;
      } else if (k != 0) {
        return false;
      } else if (!is_global_pool(n) && !(is_window_pool(n) && readers_accept_channels_last(ed, n.outputs[0]))) {
        return false;
      }
    }
    return true;
  }

  // Stores v channels-last: its declared shape and its readers' attributes follow, and a
  // window pool reading it passes the layout on to its own output. Returns the values changed.
  static int make_channels_last(GraphEditor& ed, ValueId v) {
    to_channels_last(ed.graph().value(v).shape);
    int changed = 1;
    for (int c : ed.consumers(v)) {
      Node& n = ed.node(c);
      if (is_op(n, "FusedConv", "ingot")) {
        if (n.inputs[0] == v) n.attrs.set_int("x_channels_last", 1);
        if (n.inputs.size() > 3 && n.inputs[3] == v) n.attrs.set_int("z_channels_last", 1);
      } else if (is_global_pool(n)) {
        n.attrs.set_int("x_channels_last", 1);
      } else {
        n.attrs.set_int("channels_last", 1);
        changed += make_channels_last(ed, n.outputs[0]);
      }
    }
    return changed;
  }

  // A declared shape must describe the new layout: [N, C, spatial...] -> [N, spatial..., C].
  static void to_channels_last(std::optional<SymShape>& decl) {
    if (!decl || decl->size() < 3) return;
    Dim c = (*decl)[1];
    decl->erase(decl->begin() + 1);
    decl->push_back(c);
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
    f.attrs.set_string("activation", act);
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
