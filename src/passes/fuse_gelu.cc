// Fuses the two decomposed GELU forms exporters emit into one ingot.Gelu node:
//   erf  (BERT's "gelu"):      0.5 * x * (1 + erf(x / sqrt(2)))        approximate = "none"
//   tanh (GPT-2's "gelu_new"): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//                                                                         approximate = "tanh"
// The match starts at the Erf/Tanh node, finds x through its argument, then walks down
// through Add(1) and the two multiplications, which exporters group in any of three ways:
//   Mul(Mul(x, 0.5), Add(1, f))   Mul(Mul(x, Add(1, f)), 0.5)   Mul(x, Mul(0.5, Add(1, f)))
// (every Mul/Add in either operand order; x/sqrt2 may be Mul(x, 1/sqrt2), x*0.5 may be x/2,
// x^3 may be Pow(x, 3) or x*x*x). Constants must be one-element and match within 1e-4
// relative; every intermediate must feed only the next node of the pattern.
#include <cmath>
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

class GeluMatcher {
 public:
  GeluMatcher(const GraphEditor& ed, const std::vector<ValueMeta>* metas) : ed_(ed), metas_(metas) {}

  // On success: x, the node whose output becomes the Gelu's, and every node of the pattern.
  struct Match {
    ValueId x = kNoValue;
    int last = -1;
    std::vector<int> nodes;
    bool tanh = false;
  };

  bool match(int f, Match* m) {
    const Node& fn = ed_.node(f);
    if (fn.inputs.size() != 1 || fn.outputs.size() != 1 || fn.inputs[0] == kNoValue) return false;
    m->nodes = {f};
    m->tanh = is_op(fn, "Tanh");
    if (!(m->tanh ? tanh_argument(fn.inputs[0], f, m) : erf_argument(fn.inputs[0], f, m))) return false;
    return tail(fn.outputs[0], f, m);
  }

 private:
  // The constant v when it is one element, of rank <= x's (so it cannot widen the result) and
  // within 1e-4 relative of `want`.
  bool is_const(ValueId v, ValueId x, double want) const {
    auto c = scalar_constant(ed_, v);
    if (!c || std::fabs(*c - want) > 1e-4 * std::fabs(want)) return false;
    int x_rank = 0;  // without shape inference only rank-0 constants are safe
    if (metas_ && size_t(x) < metas_->size() && (*metas_)[size_t(x)].known) x_rank = int((*metas_)[size_t(x)].shape.size());
    return ed_.constant(v)->rank() <= x_rank;
  }

  // v is the only input of `reader` besides constants and produced by `op`: its node, else -1.
  int feeding(ValueId v, int reader, const char* op) const {
    if (!ed_.only_feeds(v, reader)) return -1;
    return producer_if(ed_, v, op);
  }

  // Erf's argument: Div(x, sqrt2) or Mul(x, 1/sqrt2).
  bool erf_argument(ValueId a, int f, Match* m) {
    int p = feeding(a, f, "Div");
    if (p >= 0) {
      const Node& n = ed_.node(p);
      if (n.inputs.size() != 2 || !is_const(n.inputs[1], n.inputs[0], std::sqrt(2.0))) return false;
      m->x = n.inputs[0];
    } else if ((p = feeding(a, f, "Mul")) >= 0) {
      const Node& n = ed_.node(p);
      if (n.inputs.size() != 2) return false;
      for (int i = 0; i < 2 && m->x == kNoValue; ++i)
        if (is_const(n.inputs[size_t(1 - i)], n.inputs[size_t(i)], std::sqrt(0.5))) m->x = n.inputs[size_t(i)];
      if (m->x == kNoValue) return false;
    } else {
      return false;
    }
    m->nodes.push_back(p);
    return true;
  }

  // Tanh's argument: Mul(sqrt(2/pi), Add(x, Mul(0.044715, cube(x)))).
  bool tanh_argument(ValueId a, int f, Match* m) {
    int scale = feeding(a, f, "Mul");
    if (scale < 0 || ed_.node(scale).inputs.size() != 2) return false;
    const Node& sn = ed_.node(scale);
    for (int i = 0; i < 2; ++i) {
      ValueId inner = sn.inputs[size_t(i)];
      int add = feeding(inner, scale, "Add");
      if (add < 0 || ed_.node(add).inputs.size() != 2) continue;
      // Which Add operand is 0.044715 * x^3 decides x; the other operand must be x itself.
      for (int j = 0; j < 2; ++j) {
        std::vector<int> nodes;
        ValueId x = cubic_term(ed_.node(add).inputs[size_t(j)], add, &nodes);
        if (x == kNoValue || ed_.node(add).inputs[size_t(1 - j)] != x) continue;
        if (!is_const(sn.inputs[size_t(1 - i)], x, std::sqrt(2.0 / M_PI))) continue;
        m->x = x;
        m->nodes.insert(m->nodes.end(), {scale, add});
        m->nodes.insert(m->nodes.end(), nodes.begin(), nodes.end());
        return true;
      }
    }
    return false;
  }

  // v = Mul(0.044715, cube(x)) read only by `reader`: returns x, or kNoValue.
  ValueId cubic_term(ValueId v, int reader, std::vector<int>* nodes) const {
    int mul = feeding(v, reader, "Mul");
    if (mul < 0 || ed_.node(mul).inputs.size() != 2) return kNoValue;
    const Node& mn = ed_.node(mul);
    for (int i = 0; i < 2; ++i) {
      std::vector<int> cube_nodes;
      ValueId x = cube(mn.inputs[size_t(i)], mul, &cube_nodes);
      if (x == kNoValue || !is_const(mn.inputs[size_t(1 - i)], x, 0.044715)) continue;
      nodes->push_back(mul);
      nodes->insert(nodes->end(), cube_nodes.begin(), cube_nodes.end());
      return x;
    }
    return kNoValue;
  }

  // v = Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x) read only by `reader`: x, or kNoValue.
  ValueId cube(ValueId v, int reader, std::vector<int>* nodes) const {
    if (int p = feeding(v, reader, "Pow"); p >= 0) {
      const Node& n = ed_.node(p);
      if (n.inputs.size() != 2 || !is_const(n.inputs[1], n.inputs[0], 3.0)) return kNoValue;
      nodes->push_back(p);
      return n.inputs[0];
    }
    int outer = feeding(v, reader, "Mul");
    if (outer < 0 || ed_.node(outer).inputs.size() != 2) return kNoValue;
    const Node& on = ed_.node(outer);
    for (int i = 0; i < 2; ++i) {
      int sq = feeding(on.inputs[size_t(i)], outer, "Mul");
      if (sq < 0) continue;
      const Node& qn = ed_.node(sq);
      ValueId x = on.inputs[size_t(1 - i)];
      if (qn.inputs.size() == 2 && qn.inputs[0] == x && qn.inputs[1] == x) {
        nodes->insert(nodes->end(), {outer, sq});
        return x;
      }
    }
    return kNoValue;
  }

  // True when v is 0.5 * x (Mul either order, or Div(x, 2)) and feeds only `reader`.
  bool is_half_x(ValueId v, ValueId x, int reader, int* node) const {
    if (int p = feeding(v, reader, "Mul"); p >= 0) {
      ValueId c = other_input(ed_.node(p), x);
      if (c == kNoValue || !is_const(c, x, 0.5)) return false;
      *node = p;
      return true;
    }
    if (int p = feeding(v, reader, "Div"); p >= 0) {
      const Node& n = ed_.node(p);
      if (n.inputs.size() != 2 || n.inputs[0] != x || !is_const(n.inputs[1], x, 2.0)) return false;
      *node = p;
      return true;
    }
    return false;
  }

  // From f = Erf/Tanh output: Add(f, 1), then the three groupings of "* x * 0.5".
  bool tail(ValueId fv, int f, Match* m) {
    const ValueId x = m->x;
    int add = sole_consumer_if(ed_, fv, "Add");
    if (add < 0 || ed_.read_by_subgraph(fv)) return false;
    ValueId one = other_input(ed_.node(add), fv);
    if (one == kNoValue || !is_const(one, x, 1.0)) return false;
    m->nodes.push_back(add);
    ValueId t = ed_.node(add).outputs[0];
    int c1 = sole_consumer_if(ed_, t, "Mul");
    if (c1 < 0 || ed_.read_by_subgraph(t)) return false;
    ValueId other = other_input(ed_.node(c1), t);
    if (other == kNoValue) return false;
    m->nodes.push_back(c1);
    ValueId v1 = ed_.node(c1).outputs[0];
    if (other == x) {  // Mul(Mul(x, 1 + f), 0.5)
      int c2 = sole_consumer_if(ed_, v1, "Mul");
      if (c2 < 0 || ed_.read_by_subgraph(v1)) return false;
      ValueId half = other_input(ed_.node(c2), v1);
      if (half == kNoValue || !is_const(half, x, 0.5)) return false;
      m->nodes.push_back(c2);
      m->last = c2;
      return true;
    }
    if (is_const(other, x, 0.5)) {  // Mul(x, Mul(0.5, 1 + f))
      int c2 = sole_consumer_if(ed_, v1, "Mul");
      if (c2 < 0 || ed_.read_by_subgraph(v1) || other_input(ed_.node(c2), v1) != x) return false;
      m->nodes.push_back(c2);
      m->last = c2;
      return true;
    }
    int half = -1;  // Mul(Mul(x, 0.5), 1 + f)
    if (!is_half_x(other, x, c1, &half)) return false;
    m->nodes.push_back(half);
    m->last = c1;
    return true;
  }

  const GraphEditor& ed_;
  const std::vector<ValueMeta>* metas_;
};

class FuseGelu : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    GraphEditor ed(model.graph);
    GeluMatcher matcher(ed, metas);
    int rewrites = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !(is_op(ed.node(i), "Erf") || is_op(ed.node(i), "Tanh"))) continue;
      GeluMatcher::Match m;
      if (!matcher.match(i, &m)) continue;
      bool all_alive = true;
      for (int k : m.nodes) all_alive &= ed.alive(k);
      if (!all_alive) continue;
      Node g;
      g.name = ed.node(m.last).name + "/gelu";
      g.op_type = "Gelu";
      g.domain = "ingot";
      g.inputs = {m.x};
      g.outputs = {ed.node(m.last).outputs[0]};
      Attribute a;
      a.kind = Attribute::Kind::kString;
      a.s = m.tanh ? "tanh" : "none";
      g.attrs.set("approximate", a);
      for (int k : m.nodes) ed.remove_node(k);
      ed.add_node(std::move(g));
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_gelu", FuseGelu);

}  // namespace ingot
