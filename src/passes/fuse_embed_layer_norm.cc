// Fuses a transformer's embedding layer into one op: the word, position and token-type lookups
// (Gather of a constant [V, H] table), their sum and the LayerNorm (already an ingot.SkipLayerNorm
// of the sum by fuse_skip_layer_norm) become
//   ingot.EmbedLayerNorm(gamma, beta, table0, ids0, table1, ids1[, table2, ids2]) -> (Y[, sum])
// Each gathered row is read once and the sum never goes to memory: on a GPU that is 3-4 launches
// and three [B, S, H] round trips fewer per inference; on the CPU, two passes over the sum fewer.
//
// Matched: SkipLayerNorm(X, skip, gamma[, beta]) without a bias, where X and skip are each a
// Gather(table, ids) (axis 0, constant 2-D table) or an Add of two such Gathers, every
// intermediate read only there, at most three lookups in all, all tables of one dtype and width.
// A lookup may also be read by Shape nodes (TorchScript's DistilBERT and GPT-2 take the sequence
// length off the word embeddings, and their position ids depend on it): such a Shape becomes
// Concat(Shape(ids), [H]), the same value computed without the lookup.
// The lookups keep the unfused order and grouping (attribute x_terms: how many of them made X),
// so the sum rounds exactly as before: s = (X terms summed) + (skip terms summed).
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

constexpr int kMaxLookups = 3;

struct Lookup {
  int gather = -1;
  ValueId table = kNoValue, ids = kNoValue;
  std::vector<int> shape_readers;  // plain Shape nodes reading the gathered rows
};

class FuseEmbedLayerNorm : public Pass {
 public:
  Expected<int> run(Model& model, PassContext&) const override {
    GraphEditor ed(model.graph);
    int rewrites = 0;
    const int n = ed.num_nodes();
    for (int i = 0; i < n; ++i) {
      if (!ed.alive(i) || !is_op(ed.node(i), "SkipLayerNorm", "ingot")) continue;
      const Node& sln = ed.node(i);
      if (sln.inputs.size() < 3 || sln.inputs.size() > 4) continue;  // a bias input: not an embedding sum
      std::vector<Lookup> lookups;
      std::vector<int> adds;
      bool ok = terms(ed, sln.inputs[0], i, lookups, adds);
      const int64_t x_terms = int64_t(lookups.size());
      ok = ok && terms(ed, sln.inputs[1], i, lookups, adds);
      if (!ok || lookups.size() < 2 || int(lookups.size()) > kMaxLookups) continue;
      const Tensor* first = ed.constant(lookups[0].table);
      for (const Lookup& l : lookups) {
        const Tensor* t = ed.constant(l.table);
        ok &= t && t->dtype() == first->dtype() && t->dim(1) == first->dim(1);
      }
      if (!ok) continue;

      Node f;
      f.name = sln.name + "/embed_layer_norm";
      f.op_type = "EmbedLayerNorm";
      f.domain = "ingot";
      f.inputs = {sln.inputs[2], sln.inputs.size() > 3 ? sln.inputs[3] : kNoValue};
      for (const Lookup& l : lookups) {
        f.inputs.push_back(l.table);
        f.inputs.push_back(l.ids);
      }
      f.outputs = sln.outputs;
      Attribute eps, xt;
      eps.kind = Attribute::Kind::kFloat;
      eps.f = sln.attrs.get_float("epsilon", 1e-5f);
      xt.kind = Attribute::Kind::kInt;
      xt.i = x_terms;
      f.attrs.set("epsilon", eps);
      f.attrs.set("x_terms", xt);
      const int64_t width = first->dim(1);
      ed.remove_node(i);
      for (int a : adds) ed.remove_node(a);
      for (const Lookup& l : lookups) {
        for (int sh : l.shape_readers) shape_without_lookup(ed, sh, l.ids, width);
        ed.remove_node(l.gather);
      }
      ed.add_node(std::move(f));
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }

 private:
  // A Gather of a constant [V, H] table along axis 0 whose output `user` reads once and nothing
  // else reads but plain Shape nodes (no start/end: their value is then shape(ids) ++ [H]).
  static bool lookup(const GraphEditor& ed, ValueId v, int user, Lookup& out) {
    int g = producer_if(ed, v, "Gather");
    if (g < 0 || ed.is_graph_output(v) || ed.read_by_subgraph(v)) return false;
    std::vector<int> shape_readers;
    int user_reads = 0;
    for (int c : ed.consumers(v)) {
      const Node& cn = ed.node(c);
      if (c == user) ++user_reads;
      else if (is_op(cn, "Shape") && !cn.attrs.has("start") && !cn.attrs.has("end")) shape_readers.push_back(c);
      else return false;
    }
    if (user_reads != 1) return false;
    const Node& gn = ed.node(g);
    if (gn.inputs.size() != 2 || gn.attrs.get_int("axis", 0) != 0) return false;
    const Tensor* t = ed.constant(gn.inputs[0]);
    if (!t || t->rank() != 2 || !dtype_is_float(t->dtype())) return false;
    out = Lookup{g, gn.inputs[0], gn.inputs[1], std::move(shape_readers)};
    return true;
  }

  // Replaces Shape(Gather(table, ids)) by Concat(Shape(ids), [width]), which writes the same value.
  static void shape_without_lookup(GraphEditor& ed, int shape_node, ValueId ids, int64_t width) {
    const Node old = ed.node(shape_node);
    Tensor w(DType::kInt64, {1});
    w.data<int64_t>()[0] = width;
    ValueId width_value = ed.add_initializer(old.name + "/embedding_width", std::move(w));
    ValueId ids_shape = ed.graph().add_value(old.name + "/ids_shape", DType::kInt64);
    Node sh;
    sh.name = old.name + "/ids";
    sh.op_type = "Shape";
    sh.inputs = {ids};
    sh.outputs = {ids_shape};
    Node cat;
    cat.name = old.name + "/with_width";
    cat.op_type = "Concat";
    cat.inputs = {ids_shape, width_value};
    cat.outputs = old.outputs;
    Attribute axis;
    axis.kind = Attribute::Kind::kInt;
    axis.i = 0;
    cat.attrs.set("axis", axis);
    ed.remove_node(shape_node);
    ed.add_node(std::move(sh));
    ed.add_node(std::move(cat));
  }

  // v is one lookup, or an Add of two, read only by `user`; appends them in operand order.
  static bool terms(const GraphEditor& ed, ValueId v, int user, std::vector<Lookup>& out, std::vector<int>& adds) {
    Lookup l;
    if (lookup(ed, v, user, l)) {
      out.push_back(l);
      return true;
    }
    int a = producer_if(ed, v, "Add");
    if (a < 0 || !ed.only_feeds(v, user) || ed.node(a).inputs.size() != 2) return false;
    if (ed.node(a).inputs[0] == ed.node(a).inputs[1]) return false;  // x + x: one lookup read twice
    Lookup l0, l1;
    if (!lookup(ed, ed.node(a).inputs[0], a, l0) || !lookup(ed, ed.node(a).inputs[1], a, l1)) return false;
    out.push_back(l0);
    out.push_back(l1);
    adds.push_back(a);
    return true;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_embed_layer_norm", FuseEmbedLayerNorm);

}  // namespace ingot
