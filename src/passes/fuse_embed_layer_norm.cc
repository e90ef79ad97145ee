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
// A term may also be a constant [S, H] or [1, S, H] (a position lookup that fold_constants has
// already evaluated, as it does when the sequence length is fixed and the rows are few: MiniLM's
// 128 x 384): it becomes a lookup of that table by the ids 0..S-1 ([S] or [1, S], broadcast
// against the other ids as the constant broadcast against their rows).
// The lookups keep the unfused order and grouping (attribute x_terms: how many of them made X),
// so the sum rounds exactly as before: s = (X terms summed) + (skip terms summed).
#include <vector>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

constexpr int kMaxLookups = 3;

struct Lookup {
  int gather = -1;  // -1: a constant term, `table` the constant itself and no ids yet
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
      int constants = 0;
      const Lookup* gathered = nullptr;
      for (const Lookup& l : lookups) {
        constants += l.gather < 0;
        if (l.gather >= 0 && !gathered) gathered = &l;
      }
      if (!gathered || constants > 1) continue;
      const Tensor* first = ed.constant(gathered->table);
      for (const Lookup& l : lookups) {
        const Tensor* t = ed.constant(l.table);
        ok &= t && t->dtype() == first->dtype() && t->shape().back() == first->dim(1);
      }
      if (!ok) continue;
      for (Lookup& l : lookups)
        if (l.gather < 0) constant_as_lookup(ed, sln.name, l);

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
        if (l.gather >= 0) ed.remove_node(l.gather);
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

  // A constant [S, H] or [1, S, H] float term: a lookup of its S rows, ids made later.
  static bool constant_term(const GraphEditor& ed, ValueId v, Lookup& out) {
    const Tensor* t = ed.constant(v);
    if (!t || !dtype_is_float(t->dtype()) || t->rank() < 2 || t->rank() > 3 || (t->rank() == 3 && t->dim(0) != 1) ||
        t->numel() == 0)
      return false;
    out = Lookup{-1, v, kNoValue, {}};
    return true;
  }

  // The constant term of `l` as a table [S, H] (itself, or a [1, S, H] one reshaped) read at ids
  // 0..S-1, shaped [S] or [1, S] like the constant's leading dims so that the ids broadcast as
  // the constant did.
  static void constant_as_lookup(GraphEditor& ed, const std::string& name, Lookup& l) {
    const Tensor& c = *ed.constant(l.table);
    const int64_t S = c.shape()[c.rank() - 2], H = c.shape().back();
    Tensor ids(DType::kInt64, c.rank() == 3 ? Shape{1, S} : Shape{S});
    for (int64_t i = 0; i < S; ++i) ids.data<int64_t>()[i] = i;
    if (c.rank() == 3) l.table = ed.add_initializer(name + "/constant_rows", c.clone().reshaped({S, H}));
    l.ids = ed.add_initializer(name + "/constant_row_ids", std::move(ids));
  }

  // v is one lookup or constant term, or an Add of two lookups, read only by `user`; appends
  // them in operand order.
  static bool terms(const GraphEditor& ed, ValueId v, int user, std::vector<Lookup>& out, std::vector<int>& adds) {
    Lookup l;
    if (lookup(ed, v, user, l) || constant_term(ed, v, l)) {
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
