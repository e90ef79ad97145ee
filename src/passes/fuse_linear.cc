// Fuses linear layers into one ingot.FusedMatMul node (inputs A, W[K,N], bias[N] optional;
// attributes activation "" | "Relu" | "Gelu" | "GeluTanh" and precision "fp32"):
//   MatMul(A, W const 2-D) [+ Add(const bias broadcast over the last dim)] [+ activation]
//   Gemm(A, B const, C const vector or absent; alpha = beta = 1, transA = 0) [+ activation]
// The point is that the CPU kernel packs W once into oneDNN's blocked layout and applies the
// bias and activation in the GEMM's epilogue, instead of three passes over the activations.
// transB is handled by a transposed copy of B as a new initializer. An activation separated
// from the linear by a Reshape (GPT-2's Gemm on 2-D rows, reshaped back to [B, S, N]) is
// fused too: elementwise ops commute with reshapes, so the Reshape moves after the fused node.
// Only float32 constant weights fuse: the kernel packs them at load time.
#include <algorithm>
#include <map>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

// A value the rewrite may swallow: read only by `reader` and not visible elsewhere.
bool fusable_intermediate(const GraphEditor& ed, ValueId v, int reader) {
  return ed.only_feeds(v, reader) && !ed.read_by_subgraph(v);
}

// The activation attribute for node `n`, or nullopt if `n` is no activation we fuse.
std::optional<std::string> activation_of(const Node& n) {
  if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
  if (is_op(n, "Relu")) return std::string("Relu");
  if (is_op(n, "Gelu") || is_op(n, "Gelu", "ingot")) {
    std::string a = n.attrs.get_string("approximate", "none");
    if (a == "none") return std::string("Gelu");
    if (a == "tanh") return std::string("GeluTanh");
  }
  return std::nullopt;
}

class FuseLinear : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    GraphEditor ed(model.graph);
    const std::vector<ValueMeta>* metas = nullptr;
    bool metas_asked = false;
    // Shape inference is only needed for the rare bias of rank > 1; ask lazily.
    auto rank_of = [&](ValueId v) -> int {
      if (!metas_asked) metas = ctx.metas(model), metas_asked = true;
      if (!metas || size_t(v) >= metas->size() || !(*metas)[size_t(v)].known) return -1;
      return int((*metas)[size_t(v)].shape.size());
    };
    std::map<ValueId, ValueId> transposed;  // B -> B^T initializer, shared between Gemms
    int fused = 0;
    int n_nodes = ed.num_nodes();  // fused nodes appended below are never matched again
    for (int i = 0; i < n_nodes; ++i) {
      if (!ed.alive(i)) continue;
      const Node& n = ed.node(i);
      bool mm = is_op(n, "MatMul"), gemm = is_op(n, "Gemm");
      if (!mm && !gemm) continue;
      if (n.inputs.size() < 2 || n.outputs.size() != 1 || n.inputs[0] == kNoValue) continue;
      const Tensor* w = ed.constant(n.inputs[1]);
      if (!w || w->dtype() != DType::kFloat32 || w->rank() != 2) continue;

      ValueId a = n.inputs[0], weight = n.inputs[1], bias = kNoValue, tail = n.outputs[0];
      if (tail == kNoValue || ed.read_by_subgraph(tail)) continue;
      int64_t N = w->dim(1);
      if (gemm) {
        if (n.attrs.get_int("transA", 0) != 0 || n.attrs.get_float("alpha", 1.f) != 1.f) continue;
        bool trans_b = n.attrs.get_int("transB", 0) != 0;
        if (trans_b) N = w->dim(0);
        if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
          if (n.attrs.get_float("beta", 1.f) != 1.f) continue;
          auto b = bias_vector(ed, n.inputs[2], N, /*max_rank=*/2);
          if (!b) continue;
          bias = *b;
        }
        if (trans_b) {
          auto it = transposed.find(weight);
          if (it == transposed.end())
            it = transposed.emplace(weight, ed.add_initializer(ed.graph().value(weight).name + "_T",
                                                               transpose(*w))).first;
          weight = it->second;
        }
      }

      std::vector<int> removed{i};
      // + Add(bias), either operand order, unless Gemm's C already is the bias.
      if (bias == kNoValue) {
        const auto& cons = ed.consumers(tail);
        if (cons.size() == 1 && is_op(ed.node(cons[0]), "Add") && fusable_intermediate(ed, tail, cons[0])) {
          const Node& add = ed.node(cons[0]);
          ValueId other = other_input(add, tail);
          if (other != kNoValue && other != tail && add.outputs.size() == 1) {
            const Tensor* bt = ed.constant(other);
            // A bias of rank r > 1 keeps the output's shape only if the output has rank >= r.
            int max_rank = bt && bt->rank() > 1 ? rank_of(a) : 1;
            auto b = bias_vector(ed, other, N, max_rank);
            if (b && !ed.read_by_subgraph(add.outputs[0])) {
              bias = *b;
              removed.push_back(cons[0]);
              tail = add.outputs[0];
            }
          }
        }
      }
      // + activation, directly or behind a Reshape.
      std::string act;
      int reshape = -1;
      {
        const auto& cons = ed.consumers(tail);
        if (cons.size() == 1 && fusable_intermediate(ed, tail, cons[0])) {
          int c = cons[0];
          if (is_op(ed.node(c), "Reshape") && ed.node(c).inputs.size() >= 1 && ed.node(c).inputs[0] == tail &&
              ed.node(c).outputs.size() == 1 && ed.node(c).outputs[0] != kNoValue) {
            ValueId r = ed.node(c).outputs[0];
            const auto& rc = ed.consumers(r);
            if (rc.size() == 1 && fusable_intermediate(ed, r, rc[0]) && activation_of(ed.node(rc[0])) &&
                ed.node(rc[0]).outputs[0] != kNoValue && !ed.read_by_subgraph(ed.node(rc[0]).outputs[0])) {
              reshape = c;
              c = rc[0];
            }
          }
          const Node& an = ed.node(c);
          auto kind = activation_of(an);
          if (kind && an.inputs[0] == (reshape >= 0 ? ed.node(reshape).outputs[0] : tail) &&
              an.outputs[0] != kNoValue && !ed.read_by_subgraph(an.outputs[0])) {
            act = *kind;
            removed.push_back(c);
            if (reshape < 0) tail = an.outputs[0];
          } else {
            reshape = -1;
          }
        }
      }

      Node f;
      f.name = n.name.empty() ? "FusedMatMul" : n.name + "_fused";
      f.op_type = "FusedMatMul";
      f.domain = "ingot";
      f.inputs = {a, weight};
      if (bias != kNoValue) f.inputs.push_back(bias);
      f.outputs = {tail};
      Attribute as, ps;
      as.kind = ps.kind = Attribute::Kind::kString;
      as.s = act;
      ps.s = "fp32";
      f.attrs.set("activation", as);
      f.attrs.set("precision", ps);
      Node moved;
      if (reshape >= 0) {  // the Reshape now reads the fused output and writes the activation's
        moved = ed.node(reshape);
        moved.outputs[0] = ed.node(removed.back()).outputs[0];
        removed.push_back(reshape);
      }
      for (int r : removed) ed.remove_node(r);
      ed.add_node(std::move(f));
      if (reshape >= 0) ed.add_node(std::move(moved));
      ++fused;
    }
    ed.commit();
    return fused;
  }

 private:
  // `v` as a 1-D float32 bias of N elements: v itself when it already is one, else a new
  // initializer (from [1, N], [1, 1, N], or a one-element constant broadcast to N). nullopt
  // when v is no constant or would broadcast over more than the last dim, or has rank > max_rank.
  static std::optional<ValueId> bias_vector(GraphEditor& ed, ValueId v, int64_t N, int max_rank) {
    const Tensor* t = ed.constant(v);
    if (!t || t->dtype() != DType::kFloat32 || t->rank() > std::max(max_rank, 1)) return std::nullopt;
    for (int d = 0; d + 1 < t->rank(); ++d)
      if (t->dim(d) != 1) return std::nullopt;
    if (t->rank() == 1 && t->dim(0) == N) return v;
    if (t->numel() == N && t->rank() > 0 && t->dim(t->rank() - 1) == N)
      return ed.add_initializer(ed.graph().value(v).name + "_vec", t->clone().reshaped({N}));
    if (t->numel() == 1) {
      Tensor b(DType::kFloat32, {N});
      std::fill(b.data<float>(), b.data<float>() + N, t->data<float>()[0]);
      return ed.add_initializer(ed.graph().value(v).name + "_vec", std::move(b));
    }
    return std::nullopt;
  }

  static Tensor transpose(const Tensor& w) {
    int64_t r = w.dim(0), c = w.dim(1);
    Tensor t(DType::kFloat32, {c, r});
    const float* s = w.data<float>();
    float* d = t.data<float>();
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) d[j * r + i] = s[i * c + j];
    return t;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_linear", FuseLinear);

}  // namespace ingot
