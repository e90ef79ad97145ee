// CUDA engines only: moves each skip-LayerNorm's residual add into the matrix product that
// computes one of its two operands, where cuBLASLt adds it in the GEMM's epilogue (its C matrix,
// beta = 1), and leaves a plain LayerNormalization:
//
//   Y = SkipLayerNorm(P, R, gamma, beta)       P = FusedMatMul(A, W, b)  or  Attention(..., W_out, b_out)
//   →  S = FusedMatMul(A, W, b, R)  (or Attention(..., W_out, b_out, R));  Y = LayerNormalization(S, gamma, beta)
//
// The LayerNorm then reads one tensor instead of two (BERT-base at b32: 12.6 instead of 18.9 MB
// each, 24 of them), and the product reads R in its epilogue, which a compute-bound GEMM hides.
// The next pass, fold_layer_norm_into_product, may then take that LayerNormalization into P too
// (its norm_gamma / norm_beta inputs), where P writes only the rows it normalises.
// CPU engines keep SkipLayerNorm: it already reads both operands in one pass over memory.
//
// Taken when P has no activation and writes its inputs' dtype, has no residual yet, and only the
// SkipLayerNorm reads its output (directly, or through one view: GPT-2's Reshape after a 2-D
// product, the Squeeze after a one-query Attention, R then reshaped to P's output); an Attention
// has its output projection; the SkipLayerNorm has no bias input; R has the operand's shape
// exactly (no broadcast) in the probed shapes. The sum the SkipLayerNorm may output (pre-LN
// blocks carry it to the next residual) is P's (or the view's) output now, under its own name.
// Rounding: product + bias + R is rounded once instead of twice. A one-query Attention whose R
// is the Gather of its query rows from the whole sequence reads them there instead
// (residual_rows "query"); the Gather is then dead.
#include <algorithm>
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

// The residual input's index in P, or -1 when P cannot take one.
int residual_slot(const Node& p) {
  auto absent = [&](size_t i) { return p.inputs.size() <= i || p.inputs[i] == kNoValue; };
  if (is_op(p, "FusedMatMul", "ingot")) {
    if (!p.attrs.get_string("activation", "").empty() || p.attrs.get_int("output_dtype", 0) != 0) return -1;
    return absent(3) ? 3 : -1;
  }
  if (is_op(p, "Attention", "ingot")) return !absent(4) && absent(6) ? 6 : -1;
  return -1;
}

// An ingot.Attention with query_rows whose residual R is Gather(Y, indices, axis 1) of the whole
// sequence Y [B, S, M] at exactly those query positions (gather_rows_early's Gather of the
// classifier token's residual): Y, which the Attention can read in place (residual_rows
// "query"), so the Gather's kernel disappears. kNoValue otherwise.
template <class ShapeOf>
ValueId whole_sequence_residual(const GraphEditor& ed, const Node& product, ValueId r, const ShapeOf& shape_of) {
  if (!is_op(product, "Attention", "ingot")) return kNoValue;
  const std::vector<int64_t> rows = product.attrs.get_ints("query_rows");
  const int g = producer_if(ed, r, "Gather");
  if (rows.empty() || g < 0 || !ed.alive(g)) return kNoValue;
  const Node& gather = ed.node(g);
  if (gather.inputs.size() != 2) return kNoValue;
  const Shape* data = shape_of(gather.inputs[0]);
  const Shape* out = shape_of(product.outputs[0]);
  const Tensor* idx = ed.constant(gather.inputs[1]);
  if (!data || !out || !idx || data->size() != 3 || out->empty() || data->back() != out->back()) return kNoValue;
  int64_t axis = gather.attrs.get_int("axis", 0);
  if (axis < 0) axis += 3;
  if (axis != 1 || idx->shape().size() > 1 || idx->numel() != int64_t(rows.size())) return kNoValue;
  for (size_t i = 0; i < rows.size(); ++i)
    if (int64_t(idx->scalar_as_double(int64_t(i))) != rows[i]) return kNoValue;
  return gather.inputs[0];
}

bool is_view(const Node& n) {
  return is_op(n, "Reshape") || is_op(n, "Squeeze") || is_op(n, "Unsqueeze") || is_op(n, "Flatten");
}

class FoldResidualIntoProduct : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    if (ctx.device() != "cuda") return 0;
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    if (!metas) return 0;  // R's shape must be known to match the product's output
    auto shape_of = [&](ValueId v) -> const Shape* {
      if (v == kNoValue || size_t(v) >= metas->size()) return nullptr;
      const ValueMeta& m = (*metas)[size_t(v)];
      return m.known && !m.dynamic ? &m.shape : nullptr;
    };
    GraphEditor ed(model.graph);
    int rewrites = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "SkipLayerNorm", "ingot")) continue;
      const Node sln = ed.node(i);  // a copy: add_node below may move the node vector
      if (sln.inputs.size() < 3 || sln.inputs[2] == kNoValue || sln.outputs.empty()) continue;
      if (sln.inputs.size() > 4 && sln.inputs[4] != kNoValue) continue;
      for (int j = 0; j < 2; ++j) {
        const ValueId pv = sln.inputs[size_t(j)], r = sln.inputs[size_t(1 - j)];
        if (pv == kNoValue || r == kNoValue || pv == r) continue;
        // The operand is the product's output, or a view of it (a Reshape back to [B, S, H]
        // after a 2-D product, a Squeeze of a one-query attention's [B, 1, H]).
        const int tail = ed.producer(pv);
        if (tail < 0 || !ed.alive(tail) || !ed.only_feeds(pv, i) || ed.node(tail).outputs.size() != 1) continue;
        const bool view = is_view(ed.node(tail));
        const ValueId u = view ? ed.node(tail).inputs[0] : pv;
        const int p = view ? ed.producer(u) : tail;
        if (p < 0 || !ed.alive(p) || (view && !ed.only_feeds(u, tail)) || ed.node(p).outputs.size() != 1) continue;
        const int slot = residual_slot(ed.node(p));
        const Shape *vs = shape_of(pv), *rs = shape_of(r), *us = shape_of(u);
        if (slot < 0 || !vs || !rs || !us || *vs != *rs || us->empty()) continue;
        // Through a view, R is reshaped to the product's [rows, 1, ..., 1, H]: -1 rows keeps
        // that right for every batch and sequence length.
        std::vector<int64_t> target{-1};
        for (size_t k = 1; k + 1 < us->size(); ++k) target.push_back((*us)[k]);
        target.push_back(us->back());
        bool reshapable = us->back() == rs->back();
        for (size_t k = 1; k + 1 < target.size(); ++k) reshapable &= target[k] == 1;
        if (view && !reshapable) continue;

        ValueId residual = r;
        const ValueId whole = whole_sequence_residual(ed, ed.node(p), r, shape_of);
        if (whole != kNoValue) {
          residual = whole;
        } else if (view) {
          Tensor shape(DType::kInt64, {int64_t(target.size())});
          for (size_t k = 0; k < target.size(); ++k) shape.data<int64_t>()[k] = target[k];
          Node reshape;
          reshape.name = sln.name + "/residual_rows";
          reshape.op_type = "Reshape";
          reshape.inputs = {r, ed.add_initializer(reshape.name + "_shape", std::move(shape))};
          residual = model.graph.intern(reshape.name);
          reshape.outputs = {residual};
          ed.add_node(std::move(reshape));
        }
        Node product = ed.node(p);
        if (product.inputs.size() < size_t(slot) + 1) product.inputs.resize(size_t(slot) + 1, kNoValue);
        product.inputs[size_t(slot)] = residual;
        if (whole != kNoValue) {
          Attribute rows_from;
          rows_from.kind = Attribute::Kind::kString;
          rows_from.s = "query";
          product.attrs.set("residual_rows", rows_from);
        }
        // The sum keeps its name when the SkipLayerNorm output it (a graph output, or the next
        // pre-LN block's residual); else the operand's value is the sum now.
        const bool sum_read = sln.outputs.size() > 1 && sln.outputs[1] != kNoValue;
        const ValueId sum = sum_read ? sln.outputs[1] : pv;
        Node view_node;
        if (view) {
          view_node = ed.node(tail);
          view_node.outputs[0] = sum;
        } else {
          product.outputs[0] = sum;
        }

        Node ln;
        ln.name = sln.name + "/layer_norm";
        ln.op_type = "LayerNormalization";
        ln.inputs = {sum, sln.inputs[2]};
        if (sln.inputs.size() > 3 && sln.inputs[3] != kNoValue) ln.inputs.push_back(sln.inputs[3]);
        ln.outputs = {sln.outputs[0]};
        Attribute eps, axis;
        eps.kind = Attribute::Kind::kFloat;
        eps.f = sln.attrs.get_float("epsilon", 1e-5f);
        axis.kind = Attribute::Kind::kInt;
        axis.i = -1;
        ln.attrs.set("epsilon", eps);
        ln.attrs.set("axis", axis);

        ed.remove_node(i);
        ed.remove_node(p);
        if (view) ed.remove_node(tail);
        ed.add_node(std::move(product));
        if (view) ed.add_node(std::move(view_node));
        ed.add_node(std::move(ln));
        ++rewrites;
        break;
      }
    }
    ed.commit();
    if (rewrites) ctx.note(std::to_string(rewrites) + " residual add(s) moved into their GEMM's epilogue");
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fold_residual_into_product", FoldResidualIntoProduct);

}  // namespace ingot
