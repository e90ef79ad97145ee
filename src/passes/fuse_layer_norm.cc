// Fuses the decomposed layer normalisation older exporters (opset < 17, hand-written
// modules) emit into one standard LayerNormalization(axis = -1), which the existing kernel
// runs in two sweeps over each row instead of ~9 full-tensor nodes:
//   m  = ReduceMean(X, axes=[-1])            d = Sub(X, m)
//   v  = ReduceMean(Pow(d, 2) | Mul(d, d), axes=[-1])
//   n  = Div(d, Sqrt(Add(v, eps)))  |  Mul(d, Reciprocal(Sqrt(Add(v, eps))))
//   y  = Add(Mul(n, gamma), beta)            (gamma and beta each optional)
// ReduceMean's axes come from the attribute (opset <= 17) or the constant second input
// (opset >= 18); both reductions must be over the last axis only, with keepdims = 1. The match
// starts at the Sqrt, the one node every form has exactly once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/dispatch.h"
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

class LayerNormMatcher {
 public:
  LayerNormMatcher(const GraphEditor& ed, const std::vector<ValueMeta>* metas) : ed_(ed), metas_(metas) {}

  struct Match {
    ValueId x = kNoValue;
    double epsilon = 0;
    ValueId gamma = kNoValue, beta = kNoValue;  // constants, possibly of rank > 1
    int last = -1;
    std::vector<int> nodes;
  };

  bool match(int sqrt_node, Match* m) {
    const Node& sn = ed_.node(sqrt_node);
    if (sn.inputs.size() != 1 || sn.outputs.size() != 1) return false;
    // Add(v, eps), v = ReduceMean(sq).
    int add = feeding(sn.inputs[0], sqrt_node, "Add");
    if (add < 0 || ed_.node(add).inputs.size() != 2) return false;
    int var_mean = -1;
    ValueId eps = kNoValue;
    for (int i = 0; i < 2 && var_mean < 0; ++i) {
      var_mean = feeding(ed_.node(add).inputs[size_t(i)], add, "ReduceMean");
      eps = ed_.node(add).inputs[size_t(1 - i)];
    }
    if (var_mean < 0 || ed_.node(var_mean).inputs.empty()) return false;
    // sq = Pow(d, 2) | Mul(d, d).
    ValueId sq = ed_.node(var_mean).inputs[0];
    int square = feeding(sq, var_mean, "Pow");
    ValueId d = kNoValue;
    if (square >= 0) {
      const Node& p = ed_.node(square);
      auto two = p.inputs.size() == 2 ? scalar_constant(ed_, p.inputs[1]) : std::nullopt;
      if (!two || *two != 2.0 || ed_.constant(p.inputs[1])->rank() > 1) return false;
      d = p.inputs[0];
    } else if ((square = feeding(sq, var_mean, "Mul")) >= 0) {
      const Node& p = ed_.node(square);
      if (p.inputs.size() != 2 || p.inputs[0] != p.inputs[1]) return false;
      d = p.inputs[0];
    } else {
      return false;
    }
    // d = Sub(X, ReduceMean(X)).
    int sub = producer_if(ed_, d, "Sub");
    if (sub < 0 || ed_.node(sub).inputs.size() != 2) return false;
    m->x = ed_.node(sub).inputs[0];
    int mean = feeding(ed_.node(sub).inputs[1], sub, "ReduceMean");
    if (mean < 0 || ed_.node(mean).inputs.empty() || ed_.node(mean).inputs[0] != m->x) return false;
    const int rank = rank_of(m->x);
    if (!last_axis_mean(ed_.node(mean), rank) || !last_axis_mean(ed_.node(var_mean), rank)) return false;
    // eps: a one-element constant that cannot widen the result.
    auto e = scalar_constant(ed_, eps);
    if (!e || !(*e >= 0) || !std::isfinite(*e) || ed_.constant(eps)->rank() > std::max(rank, 0)) return false;
    m->epsilon = *e;
    // n = Div(d, s) | Mul(d, Reciprocal(s)), in either operand order for the Mul.
    ValueId s = sn.outputs[0];
    int norm = sole_consumer_if(ed_, s, "Div");
    if (norm >= 0) {
      const Node& dn = ed_.node(norm);
      if (dn.inputs.size() != 2 || dn.inputs[0] != d || dn.inputs[1] != s) return false;
      m->nodes = {norm};
    } else {
      int recip = sole_consumer_if(ed_, s, "Reciprocal");
      if (recip < 0) return false;
      ValueId r = ed_.node(recip).outputs[0];
      norm = sole_consumer_if(ed_, r, "Mul");
      if (norm < 0 || other_input(ed_.node(norm), r) != d) return false;
      m->nodes = {recip, norm};
    }
    // d is read by exactly the square and the normalisation, and nothing else.
    const auto& dc = ed_.consumers(d);
    if (ed_.is_graph_output(d) || dc.size() != 2 || std::find(dc.begin(), dc.end(), square) == dc.end() ||
        std::find(dc.begin(), dc.end(), norm) == dc.end())
      return false;
    m->nodes.insert(m->nodes.end(), {sqrt_node, add, var_mean, square, sub, mean});
    m->last = norm;
    // Optional Mul(gamma), then optional Add(beta).
    absorb(m, "Mul", &m->gamma);
    absorb(m, "Add", &m->beta);
    return true;
  }

  int rank_of(ValueId v) const {
    if (!metas_ || size_t(v) >= metas_->size() || !(*metas_)[size_t(v)].known) return -1;
    return int((*metas_)[size_t(v)].shape.size());
  }
  int64_t last_dim(ValueId v) const {
    int r = rank_of(v);
    return r > 0 ? (*metas_)[size_t(v)].shape.back() : -1;
  }

 private:
  int feeding(ValueId v, int reader, const char* op) const {
    return ed_.only_feeds(v, reader) ? producer_if(ed_, v, op) : -1;
  }

  // ReduceMean over exactly the last axis of a rank-`rank` input (-1: unknown), keepdims = 1.
  bool last_axis_mean(const Node& n, int rank) const {
    if (n.attrs.get_int("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes;
    if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) {
      const Tensor* t = ed_.constant(n.inputs[1]);
      if (!t) return false;
      axes = t->to_int_vector();
    } else {
      axes = n.attrs.get_ints("axes");
    }
    return axes.size() == 1 && (axes[0] == -1 || (rank > 0 && axes[0] == rank - 1));
  }

  // A per-channel constant for the normalised output: rank <= X's, every dim but the last 1,
  // the last H or 1 — exactly what LayerNormalization's Scale/B broadcast allows.
  bool channel_constant(ValueId c, ValueId x) const {
    const Tensor* t = ed_.constant(c);
    int rank = rank_of(x);
    if (!t || !dtype_is_float(t->dtype()) || t->rank() < 1 || t->rank() > rank) return false;
    for (int i = 0; i + 1 < t->rank(); ++i)
      if (t->dim(i) != 1) return false;
    int64_t last = t->shape().back();
    return last == 1 || last == last_dim(x);
  }

  void absorb(Match* m, const char* op, ValueId* param) {
    ValueId out = ed_.node(m->last).outputs[0];
    int next = sole_consumer_if(ed_, out, op);
    if (next < 0) return;
    ValueId c = other_input(ed_.node(next), out);
    if (c == kNoValue || !channel_constant(c, m->x)) return;
    *param = c;
    m->nodes.push_back(next);
    m->last = next;
  }

  const GraphEditor& ed_;
  const std::vector<ValueMeta>* metas_;
};

// A rank-1 view of a per-channel constant (LayerNormalization wants rank <= 1 for axis -1).
ValueId as_rank1(GraphEditor& ed, ValueId c, const std::string& hint) {
  const Tensor* t = ed.constant(c);
  if (t->rank() == 1) return c;
  return ed.add_initializer(hint, t->reshaped({t->shape().back()}));
}

class FuseLayerNorm : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    LayerNormMatcher matcher(ed, metas);
    int rewrites = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "Sqrt")) continue;
      LayerNormMatcher::Match m;
      if (!matcher.match(i, &m)) continue;
      const std::string name = ed.node(m.last).name + "/layer_norm";
      ValueId gamma = m.gamma;
      if (gamma != kNoValue) {
        gamma = as_rank1(ed, gamma, name + "/scale");
      } else {
        // No Mul(gamma): a scale of one, in X's dtype when known.
        DType dt = metas && size_t(m.x) < metas->size() && (*metas)[size_t(m.x)].known ? (*metas)[size_t(m.x)].dtype
                                                                                       : DType::kFloat32;
        if (!dtype_is_float(dt)) dt = DType::kFloat32;
        Tensor one(dt, {1});
        dispatch_float(dt, [&](auto tag) {
          using T = typename decltype(tag)::type;
          one.data<T>()[0] = T(1.0f);
        });
        gamma = ed.add_initializer(name + "/scale", std::move(one));
      }
      Node ln;
      ln.name = name;
      ln.op_type = "LayerNormalization";
      ln.inputs = {m.x, gamma};
      if (m.beta != kNoValue) ln.inputs.push_back(as_rank1(ed, m.beta, name + "/bias"));
      ln.outputs = {ed.node(m.last).outputs[0]};
      Attribute axis, eps;
      axis.kind = Attribute::Kind::kInt;
      axis.i = -1;
      eps.kind = Attribute::Kind::kFloat;
      eps.f = float(m.epsilon);
      ln.attrs.set("axis", axis);
      ln.attrs.set("epsilon", eps);
      for (int k : m.nodes) ed.remove_node(k);
      ed.add_node(std::move(ln));
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_layer_norm", FuseLayerNorm);

}  // namespace ingot
