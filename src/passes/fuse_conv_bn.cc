// Folds an inference-mode BatchNormalization into the Conv (or ConvTranspose) feeding it:
//   BN(conv(x, W, B)) = conv(x, W * s, (B - mean) * s + bias),  s = scale / sqrt(var + eps)
// per output channel. Everything must be constant (initializers) and the conv output must feed
// only the BN. The folded weights and bias are new initializers, so other readers of the old
// ones are unaffected (commit() frees the old ones when nothing reads them any more).
#include <cmath>

#include "ir/dispatch.h"
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

// A constant float tensor of shape [n] as doubles, or empty.
std::vector<double> channel_vector(const GraphEditor& ed, ValueId v, int64_t n) {
  const Tensor* t = v == kNoValue ? nullptr : ed.constant(v);
  if (!t || !dtype_is_float(t->dtype()) || t->shape() != Shape{n}) return {};
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[size_t(i)] = t->scalar_as_double(i);
  return r;
}

class FuseConvBn : public Pass {
 public:
  Expected<int> run(Model& model, PassContext&) const override {
    GraphEditor ed(model.graph);
    int fused = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "BatchNormalization")) continue;
      if (fold(ed, i)) ++fused;
    }
    ed.commit();
    return fused;
  }

 private:
  static bool fold(GraphEditor& ed, int bn_idx) {
    const Node& bn = ed.node(bn_idx);
    if (bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0] == kNoValue) return false;
    if (bn.attrs.get_int("training_mode", 0) != 0) return false;
    if (bn.attrs.get_int("spatial", 1) != 1) return false;  // opset < 9 per-element statistics
    // Training-mode outputs (running mean/var) must be unused.
    for (size_t o = 1; o < bn.outputs.size(); ++o)
      if (bn.outputs[o] != kNoValue && !ed.consumers(bn.outputs[o]).empty()) return false;
    for (size_t o = 1; o < bn.outputs.size(); ++o)
      if (bn.outputs[o] != kNoValue && ed.is_graph_output(bn.outputs[o])) return false;
    ValueId x = bn.inputs[0];
    int conv_idx = producer_if(ed, x, "Conv");
    bool transpose = false;
    if (conv_idx < 0) {
      conv_idx = producer_if(ed, x, "ConvTranspose");
      transpose = conv_idx >= 0;
    }
    if (conv_idx < 0 || !ed.only_feeds(x, bn_idx)) return false;
    const Node& conv = ed.node(conv_idx);
    if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return false;
    const Tensor* w = ed.constant(conv.inputs[1]);
    if (!w || !dtype_is_float(w->dtype()) || w->rank() < 3 || w->numel() == 0) return false;
    int64_t group = conv.attrs.get_int("group", 1);
    if (group <= 0) return false;
    // Output channels: W[0] for Conv; W[1] * group for ConvTranspose (W is [C_in, M/g, k...]).
    int64_t m = transpose ? w->dim(1) * group : w->dim(0);
    if (transpose && w->dim(0) % group != 0) return false;
    ValueId conv_b = conv.inputs.size() > 2 ? conv.inputs[2] : kNoValue;
    std::vector<double> b(size_t(m), 0.0);
    if (conv_b != kNoValue) {
      b = channel_vector(ed, conv_b, m);
      if (b.empty() || ed.constant(conv_b)->dtype() != w->dtype()) return false;
    }
    auto scale = channel_vector(ed, bn.inputs[1], m), bias = channel_vector(ed, bn.inputs[2], m);
    auto mean = channel_vector(ed, bn.inputs[3], m), var = channel_vector(ed, bn.inputs[4], m);
    if (scale.empty() || bias.empty() || mean.empty() || var.empty()) return false;
    for (int k = 1; k < 5; ++k)
      if (ed.constant(bn.inputs[size_t(k)])->dtype() != w->dtype()) return false;
    double eps = bn.attrs.get_float("epsilon", 1e-5f);
    std::vector<double> s(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      double d = var[size_t(c)] + eps;
      if (!(d > 0)) return false;  // a negative variance: leave the graph to report it as it runs
      s[size_t(c)] = scale[size_t(c)] / std::sqrt(d);
    }

    Tensor nw(w->dtype(), w->shape());
    Tensor nb(w->dtype(), Shape{m});
    int64_t inner = w->numel() / (w->dim(0) * w->dim(1));  // spatial size
    int64_t cin_g = w->dim(0) / group, mg = w->dim(1);
    dispatch_float(w->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = w->data<T>();
      T* dst = nw.data<T>();
      for (int64_t i = 0; i < w->numel(); ++i) {
        int64_t oc;
        if (!transpose) {
          oc = i / (w->dim(1) * inner);
        } else {
          int64_t ci = i / (mg * inner), j = (i / inner) % mg;
          oc = (ci / cin_g) * mg + j;
        }
        dst[i] = T(double(src[i]) * s[size_t(oc)]);
      }
      T* bd = nb.data<T>();
      for (int64_t c = 0; c < m; ++c)
        bd[c] = T((b[size_t(c)] - mean[size_t(c)]) * s[size_t(c)] + bias[size_t(c)]);
    });

    const std::string wname = ed.graph().value(conv.inputs[1]).name;
    Node fused = conv;
    fused.name = conv.name.empty() ? bn.name : conv.name;
    fused.inputs.resize(3);
    fused.inputs[1] = ed.add_initializer(wname + "_bn", std::move(nw));
    fused.inputs[2] = ed.add_initializer(wname + "_bn_bias", std::move(nb));
    // The folded conv takes over BN's output, so graph output names never change.
    fused.outputs = {bn.outputs[0]};
    ed.remove_node(bn_idx);
    ed.remove_node(conv_idx);
    ed.add_node(std::move(fused));
    return true;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_conv_bn", FuseConvBn);

}  // namespace ingot
