// Hands ingot.Attention its mask before the broadcasts the exporters wrap it in. The op
// broadcasts its mask to [B, heads, S, S] itself, so for its mask input
//   Expand(X, shape)  is replaced by X, and
//   And(X, T)         by X when T is true everywhere: a true constant (ConstantOfShape(true)
//                     too), or GreaterOrEqual / Greater of values with a provable lower bound
//                     (a Range with a positive step, reshaped) against a constant, and
//   GatherND(X, idx)  by Unsqueeze(X) when idx pairs every batch index with every key index:
//                     X [D0, D1] and idx = Concat(Unsqueeze(Expand(arange(D0) along axis a0)),
//                     Unsqueeze(Expand(arange(D1) along axis a1))) over the last axis, a0 < a1
//                     (transformers 5 under torch.export reads padding[b, kv] this way), so the
//                     gather is X itself laid out with D0 at a0 and D1 at a1.
// A boolean mask (mask_kind bool) that is Cast(X, to=bool) of an integer X, directly or under such
// a gather, is read as X: the kernels read integer masks as "nonzero = attend", so the Cast (one
// more kernel on the GPU) goes too.
// transformers 5 builds BERT-style padding masks as And(q_idx >= 0, padding[b, kv_idx]) and
// expands the result to [B, 1, S, S]; after this pass the kernel reads the [B, 1, 1, S] padding
// mask itself, which the CUDA flash kernel stages once per (batch, head) instead of reading one
// mask element per score, and the And and Expand passes over B·S² elements are gone.
//
// The replacement reads the same mask values: X broadcasts to the removed node's output, which
// broadcasts to the scores, so X broadcasts to the scores (and its rank is no higher). The mask
// value itself is never rewritten, only the Attention's input, so other readers keep it.
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ir/attention_attrs.h"
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

constexpr int kMaskInput = 3;  // ingot.Attention's inputs: X, W_qkv, b_qkv, mask, W_out, b_out
constexpr int kMaxDepth = 12;  // producer chains followed; the exporters' are 3-5 deep

// Ops that move or replicate elements without changing any value.
bool is_value_preserving(const Node& n) {
  for (const char* op : {"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Expand", "Identity"})
    if (is_op(n, op)) return true;
  return false;
}

// The smallest value v can hold, when provable.
std::optional<double> lower_bound(const GraphEditor& ed, ValueId v, int depth) {
  if (v == kNoValue || depth > kMaxDepth) return std::nullopt;
  if (const Tensor* t = ed.constant(v)) {
    if (t->numel() == 0) return std::nullopt;
    double lo = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < t->numel(); ++i) lo = std::min(lo, t->scalar_as_double(i));
    return std::isnan(lo) ? std::nullopt : std::optional<double>(lo);
  }
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p)) return std::nullopt;
  const Node& n = ed.node(p);
  if (is_value_preserving(n)) return lower_bound(ed, n.inputs[0], depth + 1);
  if (is_op(n, "Range") && n.inputs.size() == 3) {
    auto start = scalar_constant(ed, n.inputs[0]), step = scalar_constant(ed, n.inputs[2]);
    if (start && step && *step > 0) return start;  // start, start + step, ... (or nothing)
  }
  return std::nullopt;
}

bool all_true(const GraphEditor& ed, ValueId v, int depth) {
  if (v == kNoValue || depth > kMaxDepth) return false;
  if (const Tensor* t = ed.constant(v)) {
    if (t->dtype() != DType::kBool || t->numel() == 0) return false;
    for (int64_t i = 0; i < t->numel(); ++i)
      if (!t->data<bool>()[i]) return false;
    return true;
  }
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p)) return false;
  const Node& n = ed.node(p);
  if (is_value_preserving(n)) return all_true(ed, n.inputs[0], depth + 1);
  if (is_op(n, "And") && n.inputs.size() == 2) return all_true(ed, n.inputs[0], depth + 1) && all_true(ed, n.inputs[1], depth + 1);
  if (is_op(n, "ConstantOfShape")) {
    const Tensor* t = n.attrs.get_tensor("value");  // absent: float32 zeros
    return t && t->dtype() == DType::kBool && t->numel() == 1 && t->data<bool>()[0];
  }
  const bool ge = is_op(n, "GreaterOrEqual"), gt = is_op(n, "Greater");
  if ((ge || gt) && n.inputs.size() == 2) {
    auto lo = lower_bound(ed, n.inputs[0], depth + 1);
    auto c = scalar_constant(ed, n.inputs[1]);
    return lo && c && (ge ? *lo >= *c : *lo > *c);
  }
  return false;
}

// The value the mask `m` broadcasts, when the node producing it only broadcasts it; else kNoValue.
ValueId unwrapped(const GraphEditor& ed, ValueId m) {
  const int p = ed.producer(m);
  if (p < 0 || !ed.alive(p)) return kNoValue;
  const Node& n = ed.node(p);
  if (is_op(n, "Expand") && n.inputs.size() == 2) return n.inputs[0];
  if (is_op(n, "And") && n.inputs.size() == 2) {
    if (all_true(ed, n.inputs[1], 0)) return n.inputs[0];
    if (all_true(ed, n.inputs[0], 0)) return n.inputs[1];
  }
  return kNoValue;
}

// v is arange(n) laid along one axis, reshaped by Unsqueeze only: returns that axis and v's rank
// (n is checked against shapes by the caller). A Range(0, n, 1) or a constant 0, 1, ..., n - 1
// (folding turns a Range of a fixed length into one).
struct LaidRange {
  int axis = 0, rank = 1;
  ValueId value = kNoValue;
};
std::optional<LaidRange> laid_range(const GraphEditor& ed, ValueId v, int depth) {
  if (v == kNoValue || depth > kMaxDepth) return std::nullopt;
  if (const Tensor* t = ed.constant(v)) {
    int axis = -1;
    for (int d = 0; d < t->rank(); ++d)
      if (t->dim(d) != 1) {
        if (axis >= 0) return std::nullopt;
        axis = d;
      }
    if (axis < 0 || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) return std::nullopt;
    for (int64_t i = 0; i < t->numel(); ++i)
      if (t->scalar_as_double(i) != double(i)) return std::nullopt;
    return LaidRange{axis, int(t->rank()), v};
  }
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p)) return std::nullopt;
  const Node& n = ed.node(p);
  if (is_op(n, "Range") && n.inputs.size() == 3) {
    auto start = scalar_constant(ed, n.inputs[0]), step = scalar_constant(ed, n.inputs[2]);
    if (start && step && *start == 0 && *step == 1) return LaidRange{0, 1, v};
    return std::nullopt;
  }
  if (is_op(n, "Unsqueeze")) {
    std::vector<int64_t> axes = n.attrs.get_ints("axes");
    if (n.inputs.size() > 1) {
      const Tensor* a = ed.constant(n.inputs[1]);
      if (!a) return std::nullopt;
      axes.clear();
      for (int64_t i = 0; i < a->numel(); ++i) axes.push_back(int64_t(a->scalar_as_double(i)));
    }
    auto in = laid_range(ed, n.inputs[0], depth + 1);
    if (!in || axes.empty()) return std::nullopt;
    const int rank = in->rank + int(axes.size());
    std::vector<bool> inserted(size_t(rank), false);
    for (int64_t a : axes) {
      if (a < 0) a += rank;
      if (a < 0 || a >= rank || inserted[size_t(a)]) return std::nullopt;
      inserted[size_t(a)] = true;
    }
    int axis = 0;  // the output position of input axis in->axis
    for (int d = 0, seen = 0; d < rank; ++d) {
      if (inserted[size_t(d)]) continue;
      if (seen++ == in->axis) axis = d;
    }
    return LaidRange{axis, rank, in->value};
  }
  return std::nullopt;
}

// One index component of a GatherND's indices: Unsqueeze(Expand(arange laid along an axis), -1)
// (the Expand optional). Returns the component's grid axis (in the Expand's output, of rank
// `grid_rank`) and the arange value.
std::optional<LaidRange> index_component(const GraphEditor& ed, ValueId u, const std::vector<ValueMeta>& metas) {
  const int pu = ed.producer(u);
  if (pu < 0 || !ed.alive(pu) || !is_op(ed.node(pu), "Unsqueeze")) return std::nullopt;
  const Node& un = ed.node(pu);
  std::vector<int64_t> axes = un.attrs.get_ints("axes");
  if (un.inputs.size() > 1) {
    const Tensor* a = ed.constant(un.inputs[1]);
    if (!a || a->numel() != 1) return std::nullopt;
    axes = {int64_t(a->scalar_as_double(0))};
  }
  ValueId e = un.inputs[0];
  if (axes.size() != 1 || size_t(e) >= metas.size() || !metas[size_t(e)].known) return std::nullopt;
  const int grid_rank = int(metas[size_t(e)].shape.size());
  if (axes[0] != -1 && axes[0] != grid_rank) return std::nullopt;  // a new last axis
  ValueId v = e;
  const int pe = ed.producer(e);
  if (pe >= 0 && ed.alive(pe) && is_op(ed.node(pe), "Expand")) v = ed.node(pe).inputs[0];
  auto r = laid_range(ed, v, 0);
  if (!r || r->rank > grid_rank) return std::nullopt;
  r->axis += grid_rank - r->rank;  // Expand aligns shapes from the right
  r->rank = grid_rank;
  return r;
}

// A gather reading X[i, j] at the grid position that holds i along rows.axis and j along
// cols.axis (both aranges laid out by Unsqueeze, in a grid of rank rows.rank).
struct GridGather {
  ValueId x = kNoValue;
  LaidRange rows, cols;
  ValueId row_stride = kNoValue;  // flat form: the stride i is scaled by, which must be X's width
  ValueId result = kNoValue;      // flat form: the value whose shape must be the laid-out grid
};

// GatherND(X, Concat(Unsqueeze(Expand(i laid out), -1), Unsqueeze(Expand(j laid out), -1))):
// torch.export's form.
std::optional<GridGather> match_gather_nd(const GraphEditor& ed, const Node& g, const std::vector<ValueMeta>& metas) {
  if (!is_op(g, "GatherND") || g.inputs.size() != 2 || g.attrs.get_int("batch_dims", 0) != 0) return std::nullopt;
  const int pc = ed.producer(g.inputs[1]);
  if (pc < 0 || !ed.alive(pc) || !is_op(ed.node(pc), "Concat") || ed.node(pc).inputs.size() != 2) return std::nullopt;
  const Node& cat = ed.node(pc);
  std::optional<LaidRange> parts[2];
  for (int k = 0; k < 2; ++k) {
    parts[k] = index_component(ed, cat.inputs[size_t(k)], metas);
    if (!parts[k]) return std::nullopt;
  }
  const int64_t cat_axis = cat.attrs.get_int("axis", 0);
  if (cat_axis != -1 && cat_axis != parts[0]->rank) return std::nullopt;
  return GridGather{g.inputs[0], *parts[0], *parts[1], kNoValue, kNoValue};
}

// Reshape(...(Gather(Flatten(X, axis 2), Add(j laid out, Mul(i laid out, stride)), axis 0))):
// TorchScript's form, indexing X's rows flattened (stride = X's width) and reshaped to the grid.
std::optional<GridGather> match_flat_gather(const GraphEditor& ed, ValueId mask) {
  ValueId v = mask;
  for (int p; (p = ed.producer(v)) >= 0 && ed.alive(p) && is_op(ed.node(p), "Reshape");) v = ed.node(p).inputs[0];
  const int pg = ed.producer(v);
  if (v == mask || pg < 0 || !ed.alive(pg)) return std::nullopt;
  const Node& g = ed.node(pg);
  if (!is_op(g, "Gather") || g.inputs.size() != 2 || g.attrs.get_int("axis", 0) != 0) return std::nullopt;
  const int pf = ed.producer(g.inputs[0]), pa = ed.producer(g.inputs[1]);
  if (pf < 0 || pa < 0 || !ed.alive(pf) || !ed.alive(pa)) return std::nullopt;
  const Node& flat = ed.node(pf);
  if (!is_op(flat, "Flatten") || flat.attrs.get_int("axis", 1) != 2 || !is_op(ed.node(pa), "Add")) return std::nullopt;
  const Node& add = ed.node(pa);
  for (int k = 0; k < 2; ++k) {
    auto cols = laid_range(ed, add.inputs[size_t(k)], 0);
    const int pm = ed.producer(add.inputs[size_t(1 - k)]);
    if (!cols || pm < 0 || !ed.alive(pm) || !is_op(ed.node(pm), "Mul")) continue;
    const Node& mul = ed.node(pm);
    for (int m = 0; m < 2; ++m) {
      auto rows = laid_range(ed, mul.inputs[size_t(m)], 0);
      if (rows) return GridGather{flat.inputs[0], *rows, *cols, mul.inputs[size_t(1 - m)], mask};
    }
  }
  return std::nullopt;
}

// The Unsqueeze axes that lay X out as `gg` reads it; nullopt unless, at every probe, X is
// [D0, D1], the aranges span D0 and D1 (aligned to a common grid rank, rows before columns),
// a flat form's stride is D1 and its result has the laid-out shape, and at one probe D0 != D1
// (so neither arange could be the other's length by coincidence).
std::optional<std::vector<int64_t>> laid_out_axes(GridGather gg, const std::vector<const std::vector<ValueMeta>*>& probes) {
  const int rank = std::max(gg.rows.rank, gg.cols.rank);
  gg.rows.axis += rank - gg.rows.rank, gg.cols.axis += rank - gg.cols.rank;  // broadcasting aligns from the right
  if (gg.rows.axis >= gg.cols.axis) return std::nullopt;
  bool told_apart = false;
  for (const auto* metas : probes) {
    auto meta = [&](ValueId v) -> const ValueMeta* {
      return v != kNoValue && size_t(v) < metas->size() && (*metas)[size_t(v)].known ? &(*metas)[size_t(v)] : nullptr;
    };
    const ValueMeta* x = meta(gg.x);
    if (!x || x->shape.size() != 2) return std::nullopt;
    const int64_t d0 = x->shape[0], d1 = x->shape[1];
    for (auto [r, want] : {std::pair<const LaidRange*, int64_t>{&gg.rows, d0}, {&gg.cols, d1}}) {
      const ValueMeta* m = meta(r->value);
      if (!m || shape_numel(m->shape) != want) return std::nullopt;
    }
    if (gg.row_stride != kNoValue) {
      const ValueMeta* st = meta(gg.row_stride);
      if (!st || !st->value || st->value->numel() != 1 || st->value->scalar_as_double(0) != double(d1)) return std::nullopt;
      Shape laid(size_t(rank), 1);
      laid[size_t(gg.rows.axis)] = d0, laid[size_t(gg.cols.axis)] = d1;
      const ValueMeta* res = meta(gg.result);
      if (!res || res->shape != laid) return std::nullopt;
    }
    told_apart |= d0 != d1;
  }
  if (!told_apart) return std::nullopt;
  std::vector<int64_t> axes;
  for (int d = 0; d < rank; ++d)
    if (d != gg.rows.axis && d != gg.cols.axis) axes.push_back(d);
  return axes;
}

// X for Cast(X, to=bool) of an integer X (the kernels read it as the Cast would); else v.
ValueId uncast(const GraphEditor& ed, ValueId v) {
  const int p = ed.producer(v);
  if (p < 0 || !ed.alive(p) || !is_op(ed.node(p), "Cast") || ed.node(p).inputs.size() != 1) return v;
  if (ed.node(p).attrs.get_int("to", 0) != int64_t(DType::kBool)) return v;
  const ValueId x = ed.node(p).inputs[0];
  return attention_bool_mask_dtype(ed.graph().value(x).dtype) && ed.graph().value(x).dtype != DType::kBool ? x : v;
}

// What identity_gather() learned in one run of the pass: the Unsqueeze made for each gathered
// mask (shared by every Attention reading it) and the shapes it checks them at (computed once):
// those of every input binding the engine serves (its profiles' corners) or, with none, the
// declared shapes (unbound dims at 1) and the distinct-size probe. The probe alone may give two inputs that share a dim in every real call
// different sizes (torch.export names the batch of input_ids and attention_mask apart), which
// only makes the check refuse.
struct GatherRewrites {
  std::map<std::pair<ValueId, bool>, ValueId> laid;  // by (gathered mask, Cast bypassed)
  std::optional<std::vector<std::vector<ValueMeta>>> probes;
};

// An Unsqueeze of X standing for a mask that gathers X over a grid (match_gather_nd,
// match_flat_gather, laid_out_axes), of X's integer source when X is its Cast to bool and
// `bool_kind` allows; kNoValue when mask is no such gather.
ValueId identity_gather(const Model& model, PassContext& ctx, GraphEditor& ed, ValueId mask, bool bool_kind,
                        GatherRewrites& done) {
  const int p = ed.producer(mask);
  if (p < 0 || !ed.alive(p) || !(is_op(ed.node(p), "GatherND") || is_op(ed.node(p), "Reshape"))) return kNoValue;
  if (auto it = done.laid.find({mask, bool_kind}); it != done.laid.end()) return it->second;
  if (!done.probes) {
    done.probes.emplace();
    for (const ShapeBinding& b : ctx.bindings()) {
      auto m = infer_with(model, b);
      if (!m) return kNoValue;
      done.probes->push_back(std::move(*m));
    }
    if (ctx.bindings().empty()) {  // static inputs (exact), else unbound dims at 1 and the probe
      if (const auto* m0 = ctx.metas(model)) done.probes->push_back(*m0);
      if (auto d = infer_distinct(model, ctx.bindings())) done.probes->push_back(std::move(*d));
    }
  }
  std::vector<const std::vector<ValueMeta>*> probes;
  for (const auto& m : *done.probes) probes.push_back(&m);
  if (probes.empty()) return kNoValue;
  const std::string name = ed.node(p).name;
  auto gg = match_gather_nd(ed, ed.node(p), *probes[0]);
  if (!gg) gg = match_flat_gather(ed, mask);
  if (!gg) return kNoValue;
  auto axes = laid_out_axes(*gg, probes);
  if (!axes) return kNoValue;
  Node un;
  un.op_type = "Unsqueeze";
  un.name = name + "/as_laid_out";
  const ValueId data = bool_kind ? uncast(ed, gg->x) : gg->x;
  un.inputs = {data};
  auto opset = model.opsets.find("");
  if (opset != model.opsets.end() && opset->second < 13) {
    Attribute a;
    a.kind = Attribute::Kind::kInts, a.ints = *axes;
    un.attrs.set("axes", a);
  } else {
    Tensor a(DType::kInt64, {int64_t(axes->size())});
    for (size_t i = 0; i < axes->size(); ++i) a.data<int64_t>()[i] = (*axes)[i];
    un.inputs.push_back(ed.add_initializer(un.name + "/axes", std::move(a)));
  }
  const ValueId out = ed.graph().add_value(un.name, ed.graph().value(data).dtype);
  un.outputs = {out};
  ed.add_node(std::move(un));
  done.laid[{mask, bool_kind}] = out;
  return out;
}

class SimplifyAttentionMask : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    GraphEditor ed(model.graph);
    GatherRewrites gathers;
    int rewrites = 0;
    const int count = ed.num_nodes();
    for (int i = 0; i < count; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "Attention", "ingot")) continue;
      if (ed.node(i).inputs.size() <= size_t(kMaskInput)) continue;
      const ValueId original = ed.node(i).inputs[kMaskInput];
      ValueId mask = original;
      int steps = 0;
      for (ValueId x; mask != kNoValue && steps < kMaxDepth && (x = unwrapped(ed, mask)) != kNoValue; ++steps) mask = x;
      const bool bool_kind = ed.node(i).attrs.get_string("mask_kind", "none") == "bool";
      if (ValueId laid = identity_gather(model, ctx, ed, mask, bool_kind, gathers); laid != kNoValue) mask = laid, ++steps;
      if (ValueId x = bool_kind ? uncast(ed, mask) : mask; x != mask) mask = x, ++steps;
      if (mask == original) continue;
      // The editor indexes readers per value: the node is re-added with its new input.
      Node rewired = ed.node(i);
      rewired.inputs[kMaskInput] = mask;
      ed.remove_node(i);
      ed.add_node(std::move(rewired));
      ctx.note("attention mask '" + ed.graph().value(original).name + "' read as '" + ed.graph().value(mask).name +
               "' (" + std::to_string(steps) + " broadcasting op" + (steps == 1 ? "" : "s") + " left to the kernel)");
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("simplify_attention_mask", SimplifyAttentionMask);

}  // namespace ingot
