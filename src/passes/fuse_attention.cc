// fuse_attention: one matcher, walking up from every Softmax, recognises self-attention as
//   scores  = MatMul(q, k) [· or / scalar constants] [+ mask]      (mask: float added, or
//             Where(cond, 0, c) -> bool mask with filter value c)
//   P       = Softmax(scores, last axis) [then Where(IsNaN(P), 0, P)]
//   context = MatMul(P, v) -> Reshape/Transpose ... -> [B,S,N] -> [MatMul W_out (+b) | Gemm]
// where q, k and v reach back, through any Reshape/Transpose/scalar Mul/Div (and one Split for
// packed projections), to projections X·W (+b) of the same X (MatMul+Add or Gemm, possibly on X
// flattened to 2-D). What each Reshape/Transpose does is not pattern-matched but tracked as a
// layout of atoms (fuse_attention_layout.h) and checked against shape inference of several
// probes, so exporter variations are handled by one code path. Anything else stays unfused; the
// reason goes to the log.
#include "passes/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "passes/fuse_attention_internal.h"
#include "passes/match.h"

namespace ingot {
namespace {

using namespace attn;


struct Step {
  int node;
  ValueId out;  // the output of `node` the chain continues with
};

struct Proj {
  std::vector<int> nodes;
  std::vector<Step> xchain;  // Reshapes from X to the projection input
  ValueId x = kNoValue;
  Tensor w, b;  // w [K, P] (Gemm transB already undone); b [P] or undefined
};

struct Side {
  std::vector<Step> chain;  // projection output -> MatMul operand
  Proj proj;
  int split = -1, part = -1;
};


class Matcher {
 public:
  Matcher(GraphEditor& ed, const Model& m, std::vector<const std::vector<ValueMeta>*> probes)
      : ed_(ed), model_(m), probes_(std::move(probes)) {}

  bool match(int sm, Plan& plan, std::string& why);

 private:
  const Shape* shape(ValueId v, size_t p) const {
    const auto& m = *probes_[p];
    if (v == kNoValue || size_t(v) >= m.size() || !m[size_t(v)].known || m[size_t(v)].dynamic) return nullptr;
    return &m[size_t(v)].shape;
  }
  int rank(ValueId v) const { return shape(v, 0) ? int(shape(v, 0)->size()) : -1; }
  // The one consumer of v that reads its data, ignoring Shape nodes (TorchScript exports take
  // Shape of intermediates for their reshape targets; rewrite() removes them when they only
  // feed the block, and refuses the fusion otherwise). -1 if none or several.
  int data_consumer(ValueId v) const {
    if (ed_.is_graph_output(v)) return -1;
    int found = -1;
    for (int c : ed_.consumers(v)) {
      if (is_op(ed_.node(c), "Shape")) continue;
      if (found >= 0) return -1;
      found = c;
    }
    return found;
  }
  // A scalar-constant factor: the data operand of Mul(x, c)/Div(x, c), folding c into `scale`.
  ValueId scaled_input(const Node& n, double& scale) const;
  bool walk_side(ValueId v, Side& s, double& scale, std::string& why) const;
  bool parse_proj(ValueId v, Proj& p, std::string& why) const;
  bool linear_weight(const Node& n, Tensor& w, Tensor& b, std::string& why) const;
  std::optional<Layout> step_layout(const Layout& l, const Step& s) const;
  bool simulate(Layout& l, const std::vector<Step>& steps, std::string& why);
  bool verify(std::string& why) const;

  GraphEditor& ed_;
  const Model& model_;
  std::vector<const std::vector<ValueMeta>*> probes_;
  size_t ref_ = 0;
  Sizes ref_sizes_{};
  ValueId x_ = kNoValue;
  std::vector<std::pair<ValueId, Layout>> seen_;  // every value's layout, for verify()
};

ValueId Matcher::scaled_input(const Node& n, double& scale) const {
  if (n.inputs.size() != 2) return kNoValue;
  if (is_op(n, "Mul")) {
    for (int k = 0; k < 2; ++k)
      if (auto c = scalar_constant(ed_, n.inputs[size_t(1 - k)])) return scale *= *c, n.inputs[size_t(k)];
  } else if (is_op(n, "Div")) {
    auto c = scalar_constant(ed_, n.inputs[1]);
    if (c && *c != 0) return scale /= *c, n.inputs[0];
  }
  return kNoValue;
}

bool Matcher::walk_side(ValueId v, Side& s, double& scale, std::string& why) const {
  std::vector<Step> back;
  for (;;) {
    int p = ed_.producer(v);
    if (p < 0 || !ed_.alive(p)) break;
    const Node& n = ed_.node(p);
    if ((is_op(n, "Reshape") || is_op(n, "Transpose")) && !n.inputs.empty()) {
      back.push_back({p, v});
      v = n.inputs[0];
    } else if (is_op(n, "Split") && s.split < 0 && !n.inputs.empty()) {
      s.split = p;
      s.part = int(std::find(n.outputs.begin(), n.outputs.end(), v) - n.outputs.begin());
      back.push_back({p, v});
      v = n.inputs[0];
    } else if (ValueId in = scaled_input(n, scale); in != kNoValue) {
      back.push_back({p, v});
      v = in;
    } else {
      break;
    }
  }
  std::reverse(back.begin(), back.end());
  s.chain = std::move(back);
  return parse_proj(v, s.proj, why);
}

// W (and bias C) of MatMul(x, W) / Gemm(x, W, C) with constant W, as [K, P] and [P].
bool Matcher::linear_weight(const Node& n, Tensor& w, Tensor& b, std::string& why) const {
  const Tensor* wt = n.inputs.size() > 1 ? ed_.constant(n.inputs[1]) : nullptr;
  if (!wt || wt->rank() != 2) return why = "projection weight of " + n.op_type + " is not a 2-D constant", false;
  w = *wt;
  if (is_op(n, "Gemm")) {
    if (n.attrs.get_int("transA", 0) || n.attrs.get_float("alpha", 1.f) != 1.f)
      return why = "Gemm with transA or alpha != 1", false;
    if (n.attrs.get_int("transB", 0)) w = transpose2d(w);
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      const Tensor* c = ed_.constant(n.inputs[2]);
      if (!c || n.attrs.get_float("beta", 1.f) != 1.f || c->numel() != w.dim(1) || c->shape().back() != w.dim(1))
        return why = "Gemm bias is not a constant row of the output width", false;
      b = c->reshaped({c->numel()});
    }
  }
  return true;
}

bool Matcher::parse_proj(ValueId v, Proj& pr, std::string& why) const {
  int p = ed_.producer(v);
  if (p < 0 || !ed_.alive(p)) return why = "Q/K/V does not come from a projection", false;
  const Node& n = ed_.node(p);
  int mm = -1;
  if (is_op(n, "Add") && n.inputs.size() == 2) {
    for (int k = 0; k < 2 && mm < 0; ++k) {
      int cand = producer_if(ed_, n.inputs[size_t(k)], "MatMul");
      const Tensor* bias = ed_.constant(n.inputs[size_t(1 - k)]);
      if (cand < 0 || !bias || bias->rank() < 1) continue;
      int64_t ones = bias->numel() / bias->shape().back();
      if (ones != 1) continue;
      mm = cand;
      pr.b = bias->reshaped({bias->numel()});
    }
    if (mm < 0) return why = "Add before the head split is not MatMul + constant bias", false;
    pr.nodes = {mm, p};
  } else if (is_op(n, "MatMul") || is_op(n, "Gemm")) {
    mm = p;
    pr.nodes = {p};
  } else {
    return why = "Q/K/V comes from " + n.op_type + ", not a projection", false;
  }
  const Node& m = ed_.node(mm);
  if (!linear_weight(m, pr.w, pr.b, why)) return false;
  if (pr.b.defined() && pr.b.numel() != pr.w.dim(1)) return why = "projection bias width differs from weight", false;
  ValueId x = m.inputs[0];
  std::vector<Step> back;
  while (rank(x) != 3) {
    int r = producer_if(ed_, x, "Reshape");
    if (r < 0) return why = "projection input is not [batch, sequence, hidden] (or a 2-D view of one)", false;
    back.push_back({r, x});
    x = ed_.node(r).inputs[0];
  }
  std::reverse(back.begin(), back.end());
  pr.xchain = std::move(back);
  pr.x = x;
  return true;
}

// The layout of s.out given the layout of the node's data input (Split: every output).
std::optional<Layout> Matcher::step_layout(const Layout& l, const Step& s) const {
  const Node& n = ed_.node(s.node);
  if (is_op(n, "Reshape")) {
    const Shape* out = shape(s.out, ref_);
    return out ? regroup(l, *out, ref_sizes_) : std::nullopt;
  }
  if (is_op(n, "Transpose")) return permute(l, n.attrs.get_ints("perm"));
  if (is_op(n, "Split")) {
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += int64_t(l.size());
    if (axis < 0 || axis >= int64_t(l.size()) || l[size_t(axis)].empty() || l[size_t(axis)][0] != kT ||
        n.outputs.size() != 3)
      return std::nullopt;
    Layout r = l;
    r[size_t(axis)].erase(r[size_t(axis)].begin());
    return r;
  }
  return l;  // scalar Mul/Div
}

bool Matcher::simulate(Layout& l, const std::vector<Step>& steps, std::string& why) {
  for (const Step& s : steps) {
    auto r = step_layout(l, s);
    const Node& n = ed_.node(s.node);
    if (!r) return why = n.op_type + " '" + n.name + "' does not map " + str(l) + " to heads", false;
    // The three parts of a Split must be equal: verify() checks each output's shape.
    if (is_op(n, "Split"))
      for (ValueId o : n.outputs) seen_.push_back({o, *r});
    l = *r;
    seen_.push_back({s.out, l});
  }
  return true;
}

bool Matcher::verify(std::string& why) const {
  for (size_t p = 0; p < probes_.size(); ++p) {
    const Shape* xs = shape(x_, p);
    if (!xs || xs->size() != 3) return why = "X has no shape in probe " + std::to_string(p), false;
    Sizes s = ref_sizes_;
    s[kB] = (*xs)[0], s[kS] = (*xs)[1], s[kE] = (*xs)[2];
    for (const auto& [v, l] : seen_) {
      const Shape* vs = shape(v, p);
      if (!vs || !fits(l, *vs, s))
        return why = "value '" + ed_.graph().value(v).name + "' is not " + str(l) + " for every input shape", false;
    }
  }
  return true;
}

bool Matcher::match(int sm, Plan& plan, std::string& why) {
  const Node& smn = ed_.node(sm);
  ValueId sv = smn.inputs.empty() ? kNoValue : smn.inputs[0];
  int r = rank(sv);
  int64_t axis = smn.attrs.get_int("axis", model_.opset("") < 13 ? 1 : -1);
  if (r < 3 || (axis != -1 && axis != r - 1)) return why = "Softmax is not over the last axis of a rank>=3 tensor", false;
  plan.nodes = {sm};
  // Scores: [Add(mask)] over [scalar Mul/Div]* over MatMul(q, k).
  auto leads_to_matmul = [&](ValueId v) {
    double unused = 1;
    for (;;) {
      int p = ed_.producer(v);
      if (p < 0 || !ed_.alive(p)) return false;
      if (is_op(ed_.node(p), "MatMul")) return true;
      v = scaled_input(ed_.node(p), unused);
      if (v == kNoValue) return false;
    }
  };
  if (int add = producer_if(ed_, sv, "Add"); add >= 0) {
    const Node& a = ed_.node(add);
    for (int k = 0; k < 2 && plan.mask == kNoValue; ++k)
      if (a.inputs.size() == 2 && leads_to_matmul(a.inputs[size_t(k)])) plan.mask = a.inputs[size_t(1 - k)], sv = a.inputs[size_t(k)];
    if (plan.mask == kNoValue) return why = "Add before Softmax does not add to Q·Kᵀ", false;
    plan.nodes.insert(add);
  }
  for (int p; (p = ed_.producer(sv)) >= 0 && ed_.alive(p) && !is_op(ed_.node(p), "MatMul");) {
    ValueId in = scaled_input(ed_.node(p), plan.scale);
    if (in == kNoValue) return why = "Softmax input is not (scaled) Q·Kᵀ (found " + ed_.node(p).op_type + ")", false;
    plan.nodes.insert(p);
    sv = in;
  }
  int qk = producer_if(ed_, sv, "MatMul");
  if (qk < 0) return why = "Softmax input is not (scaled) Q·Kᵀ", false;
  plan.nodes.insert(qk);
  ValueId scores = sv;
  // Softmax consumers: MatMul(P, v), optionally through Where(IsNaN(P), 0, P).
  ValueId P = smn.outputs[0];
  auto cons = ed_.consumers(P);
  if (cons.size() == 2 && !ed_.is_graph_output(P)) {
    int isnan = is_op(ed_.node(cons[0]), "IsNaN") ? cons[0] : cons[1], where = cons[0] + cons[1] - isnan;
    const Node& w = ed_.node(where);
    if (!is_op(ed_.node(isnan), "IsNaN") || !is_op(w, "Where") || w.inputs.size() != 3 ||
        w.inputs[0] != ed_.node(isnan).outputs[0] || w.inputs[2] != P || scalar_constant(ed_, w.inputs[1]) != 0.0)
      return why = "Softmax output feeds something other than the context MatMul", false;
    plan.nan_to_zero = true;
    plan.nodes.insert({isnan, where});
    P = w.outputs[0];
    cons = ed_.consumers(P);
  }
  if (cons.size() != 1 || ed_.is_graph_output(P) || !is_op(ed_.node(cons[0]), "MatMul") || ed_.node(cons[0]).inputs[0] != P)
    return why = "Softmax output does not feed exactly one MatMul(P, V)", false;
  int pv = cons[0];
  plan.nodes.insert(pv);

  Side q, k, v;
  if (!walk_side(ed_.node(qk).inputs[0], q, plan.scale, why) || !walk_side(ed_.node(qk).inputs[1], k, plan.scale, why))
    return false;
  double vscale = 1;
  if (!walk_side(ed_.node(pv).inputs[1], v, vscale, why)) return false;
  if (vscale != 1) return why = "V is scaled", false;
  x_ = q.proj.x;
  if (k.proj.x != x_ || v.proj.x != x_) return why = "Q, K and V are not projections of the same input", false;
  bool packed = q.split >= 0;
  if (packed && !(k.split == q.split && v.split == q.split && q.part == 0 && k.part == 1 && v.part == 2 &&
                  q.proj.nodes == k.proj.nodes && q.proj.nodes == v.proj.nodes))
    return why = "packed projection is not split into Q, K, V in that order", false;
  if (!packed && (k.split >= 0 || v.split >= 0)) return why = "mixed packed and separate projections", false;

  // Atom sizes from the first probe whose batch and sequence sizes are distinct and > 1.
  ref_ = probes_.size();
  for (size_t p = 0; p < probes_.size() && ref_ == probes_.size(); ++p) {
    const Shape* xs = shape(x_, p);
    if (xs && xs->size() == 3 && (*xs)[0] > 1 && (*xs)[1] > 1 && (*xs)[0] != (*xs)[1]) ref_ = p;
  }
  if (ref_ == probes_.size()) return why = "no probe shape with distinct batch and sequence sizes", false;
  const Shape* qs = shape(ed_.node(qk).inputs[0], ref_);
  const Shape* xs = shape(x_, ref_);
  int64_t E = (*xs)[2], N = packed ? q.proj.w.dim(1) / 3 : q.proj.w.dim(1);
  if (!qs || qs->empty() || qs->back() <= 0 || N % qs->back() || q.proj.w.dim(0) != E)
    return why = "cannot read the head size", false;
  int64_t D = qs->back();
  plan.heads = N / D;
  ref_sizes_ = Sizes{(*xs)[0], (*xs)[1], E, 3, plan.heads, D, 1};
  for (const Side* s : {&q, &k, &v})
    if (s->proj.w.dim(0) != E || s->proj.w.dim(1) != (packed ? 3 * N : N))
      return why = "Q, K and V projections have different widths", false;

  // Layouts: X -> projection -> heads.
  Layout lq, lk, lv;
  for (auto [s, l] : {std::pair{&q, &lq}, {&k, &lk}, {&v, &lv}}) {
    *l = {{kB}, {kS}, {kE}};
    seen_.push_back({x_, *l});
    if (!simulate(*l, s->proj.xchain, why)) return false;
    if (l->back() != Group{kE}) return why = "projection input is " + str(*l), false;
    l->back() = packed ? Group{kT, kH, kD} : Group{kH, kD};
    for (int pn : s->proj.nodes) seen_.push_back({ed_.node(pn).outputs[0], *l});
    if (!simulate(*l, s->chain, why)) return false;
  }
  if (!heads_layout(lq, {{kS}, {kD}})) return why = "Q reaches Q·Kᵀ as " + str(lq) + ", not [B, H, S, D]", false;
  if (!heads_layout(lk, {{kD}, {kS}})) return why = "K reaches Q·Kᵀ as " + str(lk) + ", not [B, H, D, S]", false;
  if (!heads_layout(lv, {{kS}, {kD}})) return why = "V reaches P·V as " + str(lv) + ", not [B, H, S, D]", false;
  Layout lead(lq.begin(), lq.end() - 2);
  if (Layout(lk.begin(), lk.end() - 2) != lead || Layout(lv.begin(), lv.end() - 2) != lead)
    return why = "Q, K and V have different batch axes", false;
  Layout ls = lead;
  ls.push_back({kS}), ls.push_back({kS});
  seen_.push_back({scores, ls});
  seen_.push_back({smn.outputs[0], ls});

  // Context -> [B, S, N] -> output projection -> [B, S, M].
  Layout lc = lead;
  lc.push_back({kS}), lc.push_back({kD});
  ValueId c = ed_.node(pv).outputs[0];
  seen_.push_back({c, lc});
  std::vector<std::pair<Step, Layout>> fwd;
  for (;;) {
    int cn = data_consumer(c);
    if (cn < 0) break;
    const Node& n = ed_.node(cn);
    if (!(is_op(n, "Reshape") || is_op(n, "Transpose")) || n.inputs[0] != c) break;
    auto l = step_layout(lc, {cn, n.outputs[0]});
    if (!l) break;
    fwd.push_back({{cn, n.outputs[0]}, *l});
    lc = *l, c = n.outputs[0];
  }
  const Layout merged3{{kB}, {kS}, {kH, kD}}, merged2{{kB, kS}, {kH, kD}};
  int op = data_consumer(c);
  bool has_out = op >= 0 && (lc == merged3 || lc == merged2) && ed_.node(op).inputs[0] == c &&
                 (is_op(ed_.node(op), "MatMul") || is_op(ed_.node(op), "Gemm")) && ed_.constant(ed_.node(op).inputs[1]);
  std::string out_why;
  std::vector<std::pair<Step, Layout>> out_steps;  // output projection and the reshapes after it
  if (has_out) {
    Tensor w, b;
    has_out = linear_weight(ed_.node(op), w, b, out_why) && w.dim(0) == N;
    Layout lo(lc.begin(), lc.end() - 1);
    lo.push_back({kM});
    ValueId o = ed_.node(op).outputs[0];
    out_steps.push_back({{op, o}, lo});
    if (has_out && !b.defined()) {  // MatMul + Add(constant bias)
      int an = data_consumer(o);
      const Node* add = an >= 0 ? &ed_.node(an) : nullptr;
      if (add && is_op(*add, "Add") && add->inputs.size() == 2) {
        const Tensor* bt = ed_.constant(other_input(*add, o));
        if (bt && bt->rank() >= 1 && bt->numel() == w.dim(1) && bt->shape().back() == w.dim(1)) {
          b = bt->reshaped({bt->numel()});
          o = add->outputs[0];
          out_steps.push_back({{an, o}, lo});
        }
      }
    }
    if (has_out) ref_sizes_[kM] = w.dim(1);
    const Layout final3{{kB}, {kS}, {kM}};
    while (has_out && lo != final3) {
      int rn = data_consumer(o);
      if (rn < 0 || !is_op(ed_.node(rn), "Reshape")) {
        has_out = false;
        out_why = "output projection does not end as [B, S, M]";
        break;
      }
      o = ed_.node(rn).outputs[0];
      auto l = step_layout(lo, {rn, o});
      if (!l) { has_out = false; break; }
      lo = *l;
      out_steps.push_back({{rn, o}, lo});
    }
    if (has_out) plan.wout = w, plan.bout = b, plan.out = o;
  }
  // The context's own steps, up to the value handed on.
  size_t keep = fwd.size();
  if (!has_out) {
    out_steps.clear();
    while (keep > 0 && fwd[keep - 1].second != merged3) --keep;
    if (keep == 0) return why = "context never reaches [B, S, H*D]" + (out_why.empty() ? "" : " (" + out_why + ")"), false;
    plan.out = fwd[keep - 1].first.out;
  }
  fwd.resize(keep);
  fwd.insert(fwd.end(), out_steps.begin(), out_steps.end());
  for (const auto& [st, l] : fwd) {
    plan.nodes.insert(st.node);
    seen_.push_back({st.out, l});
  }
  for (const Side* s : {&q, &k, &v}) {
    for (const Step& st : s->chain) plan.nodes.insert(st.node);
    for (const Step& st : s->proj.xchain) plan.nodes.insert(st.node);
    plan.nodes.insert(s->proj.nodes.begin(), s->proj.nodes.end());
  }

  // Mask: broadcastable to the scores in every probe; Where(cond, 0, c) becomes a bool mask.
  if (plan.mask != kNoValue) {
    for (size_t p = 0; p < probes_.size(); ++p) {
      const Shape* ms = shape(plan.mask, p);
      const Shape* ss = shape(scores, p);
      if (!ms || !ss || ms->size() > ss->size()) return why = "mask shape unknown or of higher rank than scores", false;
      for (size_t i = 0; i < ms->size(); ++i) {
        int64_t m = (*ms)[ms->size() - 1 - i], s = (*ss)[ss->size() - 1 - i];
        bool merged_axis = lead.size() == 1 && i == 2;  // [B*H] scores: the mask may not vary there
        if ((m != 1 && m != s) || (merged_axis && m != 1)) return why = "mask does not broadcast to the scores", false;
      }
    }
    plan.mask_kind = "add";
    int w = producer_if(ed_, plan.mask, "Where");
    if (w >= 0) {
      const Node& wn = ed_.node(w);
      auto t = scalar_constant(ed_, wn.inputs[1]);
      auto f = scalar_constant(ed_, wn.inputs[2]);
      if (t && *t == 0 && f && probes_[0]->at(size_t(wn.inputs[0])).dtype == DType::kBool) {
        plan.mask = wn.inputs[0];
        plan.mask_kind = "bool";
        plan.filter = float(*f);
      }
    }
  }
  plan.x = x_;
  if (!verify(why)) return false;

  DType xt = probes_[0]->at(size_t(x_)).dtype;
  if (!dtype_is_float(xt) || q.proj.w.dtype() != xt || (plan.wout.defined() && plan.wout.dtype() != xt))
    return why = "weights and input dtypes differ or are not float", false;
  if (plan.mask_kind == "add" && probes_[0]->at(size_t(plan.mask)).dtype != xt)
    return why = "mask dtype differs from the scores", false;
  if (packed) {
    plan.wqkv = q.proj.w, plan.bqkv = q.proj.b;
  } else {
    plan.wqkv = concat_cols({q.proj.w, k.proj.w, v.proj.w}, {N, N, N}, xt, E, false);
    if (q.proj.b.defined() || k.proj.b.defined() || v.proj.b.defined())
      plan.bqkv = concat_cols({q.proj.b, k.proj.b, v.proj.b}, {N, N, N}, xt, 1, true);
  }
  for (const Tensor* t : {&plan.bqkv, &plan.bout})
    if (t->defined() && t->dtype() != xt) return why = "bias dtype differs from the input", false;
  return true;
}

}  // namespace

Expected<int> fuse_attention(Model& model, PassContext& ctx, std::vector<std::string>* log) {
  auto note = [&](const std::string& s) { if (log) log->push_back(s); };
  const std::vector<ValueMeta>* m0 = ctx.metas(model);
  if (!m0) return note("shape inference failed: nothing fused"), 0;
  std::vector<const std::vector<ValueMeta>*> probes{m0};
  std::vector<std::string> failures;
  auto distinct = infer_distinct(model, ctx.bindings(), &failures);
  for (const std::string& f : failures) note(f);
  if (distinct) probes.push_back(&*distinct);
  GraphEditor ed(model.graph);
  int fused = 0, n0 = ed.num_nodes();
  for (int i = 0; i < n0; ++i) {
    if (!ed.alive(i) || !is_op(ed.node(i), "Softmax")) continue;
    std::string label = "Softmax '" + ed.node(i).name + "': ", why;
    Matcher m(ed, model, probes);
    Plan plan;
    std::string name = "attention_" + std::to_string(fused) + (ed.node(i).name.empty() ? "" : "_" + ed.node(i).name);
    if (m.match(i, plan, why) && rewrite(ed, plan, name, why)) {
      ++fused;
      note(label + "fused into " + name + " (" + std::to_string(plan.heads) + " heads, mask " + plan.mask_kind + ")");
    } else {
      note(label + "not fused: " + why);
    }
  }
  ed.commit();
  return fused;
}

namespace {
class FuseAttention : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    std::vector<std::string> log;
    auto r = fuse_attention(model, ctx, &log);
    for (auto& l : log) ctx.note(std::move(l));
    return r;
  }
};
}  // namespace

INGOT_REGISTER_PASS("fuse_attention", FuseAttention);

}  // namespace ingot
