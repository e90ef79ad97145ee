// Moves a Gather of a few rows above the position-wise ops that produce them, so they compute
// those rows only. A sequence classifier reads one token of its last layer (DistilBERT's and
// BERT's pooler take hidden[:, 0]): that layer's feed-forward GEMMs and LayerNorms then run on
// B rows instead of B·S, and so do the residual adds folded into them.
//
//   Y = Gather(f(X1, X2, ...), idx, axis a)  →  Y = f(Gather(X1, idx, a), Gather(X2, idx, a), ...)
//
// holds when f treats positions along axis a independently: matrix products over the last axis
// with constant weights (ingot.FusedMatMul, MatMul), LayerNorm / ingot.SkipLayerNorm over the
// last axis, elementwise ops whose other operands do not reach axis a (biases, scales). The
// region grows from the Gather's data upwards, taking a producer once every reader of its
// outputs is in the region (or is the Gather); each value entering the region from outside gets
// its own Gather with the same indices. Attention stops the region (every output row reads every
// key), but an ingot.Attention whose output only the region reads computes the gathered query
// rows itself instead (its query_rows attribute; a Squeeze drops the axis for a scalar index):
// the classifier's last attention then runs its core and out-projection for one token.
// Only regions with a matrix product (or such an attention) are rewritten: elsewhere the extra
// Gathers could cost more than the rows they save.
#include <algorithm>
#include <map>
#include <set>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

using Probes = std::vector<const std::vector<ValueMeta>*>;

const Shape* shape_in(const Probes& probes, size_t p, ValueId v) {
  if (v == kNoValue || size_t(v) >= probes[p]->size()) return nullptr;
  const ValueMeta& m = (*probes[p])[size_t(v)];
  return m.known && !m.dynamic ? &m.shape : nullptr;
}

bool is_unary_elementwise(const Node& n) {
  if (is_op(n, "Gelu", "ingot")) return true;
  for (const char* op : {"Relu", "Gelu", "Tanh", "Sigmoid", "Erf", "Cast", "Neg", "Abs", "Sqrt", "Exp", "Log",
                         "Softplus", "LeakyRelu", "HardSigmoid", "HardSwish", "Identity", "Clip"})
    if (is_op(n, op)) return true;
  return false;
}

bool is_nary_elementwise(const Node& n) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where"})
    if (is_op(n, op)) return true;
  return false;
}

class RegionBuilder {
 public:
  RegionBuilder(const GraphEditor& ed, const Probes& probes, int gather, int axis, int rank)
      : ed_(ed), probes_(probes), gather_(gather), axis_(axis), rank_(rank) {}

  // Grows the region from the Gather's data; false when nothing worth rewriting was found.
  bool build(ValueId data) {
    boundary_.insert(data);
    for (bool grew = true; grew;) {
      grew = false;
      for (ValueId v : std::vector<ValueId>(boundary_.begin(), boundary_.end())) {
        const int p = ed_.producer(v);
        std::vector<ValueId> rows;
        if (p < 0 || !ed_.alive(p) || region_.count(p) || !absorbable(p, rows)) continue;
        region_.insert(p);
        for (ValueId o : ed_.node(p).outputs) boundary_.erase(o);
        for (ValueId r : rows) boundary_.insert(r);
        grew = true;
      }
    }
    for (int n : region_)
      if (is_op(ed_.node(n), "FusedMatMul", "ingot") || is_op(ed_.node(n), "MatMul")) return true;
    for (ValueId v : boundary_)
      if (attention_rows(v)) return true;
    return false;
  }
  // v is the output of an ingot.Attention (without query_rows) that only the region and the
  // Gather read, gathered on the query axis of [B, S, M] by 0-D or 1-D indices: the attention
  // can compute just those query rows.
  bool attention_rows(ValueId v) const {
    const int p = ed_.producer(v);
    if (p < 0 || !is_op(ed_.node(p), "Attention", "ingot") || ed_.node(p).attrs.has("query_rows")) return false;
    const auto& in = ed_.node(p).inputs;
    if (in.size() > 6 && in[6] != kNoValue) return false;  // a residual has all S rows
    if (axis_ != 1 || rank_ != 3 || ed_.node(p).outputs.size() != 1) return false;
    if (ed_.is_graph_output(v) || ed_.read_by_subgraph(v)) return false;
    for (int c : ed_.consumers(v))
      if (c != gather_ && !region_.count(c)) return false;
    const Tensor* idx = ed_.constant(ed_.node(gather_).inputs[1]);
    return idx && idx->rank() <= 1 && idx->numel() > 0 && (idx->dtype() == DType::kInt64 || idx->dtype() == DType::kInt32);
  }
  const std::set<int>& region() const { return region_; }
  const std::set<ValueId>& boundary() const { return boundary_; }
  // The inputs of region node n that carry rows (gathered); the others are passed as they are.
  const std::vector<int>& row_inputs(int n) const { return rows_.at(n); }

 private:
  // v has the Gather's data layout: rank `rank_` and the data's size on every axis up to `axis_`.
  bool row_shaped(ValueId v) const {
    for (size_t p = 0; p < probes_.size(); ++p) {
      const Shape* s = shape_in(probes_, p, v);
      const Shape* d = shape_in(probes_, p, data_of_gather());
      if (!s || !d || int(s->size()) != rank_) return false;
      for (int k = 0; k <= axis_; ++k)
        if ((*s)[size_t(k)] != (*d)[size_t(k)]) return false;
    }
    return true;
  }
  // v broadcasts against the rows without reaching axis `axis_` (a bias, a scale, a scalar).
  bool below_axis(ValueId v) const {
    for (size_t p = 0; p < probes_.size(); ++p) {
      const Shape* s = shape_in(probes_, p, v);
      if (!s || int(s->size()) > rank_ - axis_ - 1) return false;
    }
    return true;
  }
  ValueId data_of_gather() const { return ed_.node(gather_).inputs[0]; }

  bool absorbable(int p, std::vector<ValueId>& rows) {
    const Node& n = ed_.node(p);
    // Every output is read only inside the region (or by the Gather) and is row-shaped.
    bool any_output = false;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const ValueId v = n.outputs[o];
      if (v == kNoValue) continue;
      if (ed_.is_graph_output(v) || ed_.read_by_subgraph(v)) return false;
      const auto& readers = ed_.consumers(v);
      if (readers.empty()) continue;
      for (int c : readers)
        if (c != gather_ && !region_.count(c)) return false;
      if (!row_shaped(v)) return false;
      any_output = true;
    }
    if (!any_output || n.inputs.empty()) return false;

    std::vector<int> row_slots;
    auto fixed_rows = [&](std::initializer_list<int> slots) {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const bool row = std::find(slots.begin(), slots.end(), int(i)) != slots.end();
        if (n.inputs[i] == kNoValue) {
          if (row) return false;
          continue;
        }
        if (row ? !row_shaped(n.inputs[i]) : !below_axis(n.inputs[i])) return false;
        if (row) row_slots.push_back(int(i));
      }
      return true;
    };
    bool ok = false;
    if (is_op(n, "FusedMatMul", "ingot") || (is_op(n, "MatMul") && n.inputs.size() == 2 && ed_.constant(n.inputs[1]) &&
                                             ed_.constant(n.inputs[1])->shape().size() == 2)) {
      // The weights [K, N] and bias [N] are parameters whatever their rank.
      ok = row_shaped(n.inputs[0]) && axis_ < rank_ - 1;
      if (ok) row_slots.push_back(0);
      if (ok && n.inputs.size() > 3 && n.inputs[3] != kNoValue) {  // FusedMatMul's residual has Y's rows
        ok = row_shaped(n.inputs[3]);
        row_slots.push_back(3);
      }
    } else if (is_op(n, "SkipLayerNorm", "ingot")) {
      ok = fixed_rows({0, 1});
    } else if (is_op(n, "LayerNormalization")) {
      const int64_t a = n.attrs.get_int("axis", -1);
      ok = (a == -1 || a == rank_ - 1) && fixed_rows({0});
    } else if (is_unary_elementwise(n)) {
      ok = fixed_rows({0});
    } else if (is_nary_elementwise(n)) {
      ok = true;
      for (size_t i = 0; ok && i < n.inputs.size(); ++i) {
        if (n.inputs[i] == kNoValue) continue;
        if (row_shaped(n.inputs[i])) row_slots.push_back(int(i));
        else ok = below_axis(n.inputs[i]);
      }
      ok = ok && !row_slots.empty();
    }
    if (!ok) return false;
    rows_[p] = row_slots;
    for (int s : row_slots) rows.push_back(n.inputs[size_t(s)]);
    return true;
  }

  const GraphEditor& ed_;
  const Probes& probes_;
  int gather_, axis_, rank_;
  std::set<int> region_;
  std::set<ValueId> boundary_;
  std::map<int, std::vector<int>> rows_;
};

// The region's nodes, each after the region nodes it reads (nodes appended by earlier rewrites
// may come later in the node list than their readers).
std::vector<int> producers_first(const GraphEditor& ed, const std::set<int>& region) {
  std::vector<int> order;
  std::set<int> done;
  while (order.size() < region.size()) {
    for (int n : region) {
      if (done.count(n)) continue;
      bool ready = true;
      for (ValueId v : ed.node(n).inputs) {
        const int p = v == kNoValue ? -1 : ed.producer(v);
        if (p >= 0 && p != n && region.count(p) && !done.count(p)) ready = false;
      }
      if (ready) order.push_back(n), done.insert(n);
    }
  }
  return order;
}

// Replaces the Attention producing `v` with one that computes only the query rows `gather`
// selects (query_rows = its indices); returns the value holding what Gather(v) held.
ValueId attention_query_rows(GraphEditor& ed, const Model& model, ValueId v, const Node& gather) {
  const int p = ed.producer(v);
  Node att = ed.node(p);
  const Tensor& idx = *ed.constant(gather.inputs[1]);
  Attribute rows;
  rows.kind = Attribute::Kind::kInts;
  for (int64_t i = 0; i < idx.numel(); ++i) rows.ints.push_back(int64_t(idx.scalar_as_double(i)));
  att.attrs.set("query_rows", rows);
  att.name += "/query_rows";
  const std::string vname = ed.graph().value(v).name + "/rows";
  const ValueId out = ed.graph().add_value(vname, ed.graph().value(v).dtype);
  att.outputs = {out};
  ed.remove_node(p);
  ed.add_node(std::move(att));
  if (idx.rank() == 1) return out;
  // A scalar index drops the query axis: Squeeze it (a view, no copy).
  Node sq;
  sq.op_type = "Squeeze";
  sq.name = gather.name + "/squeeze";
  const ValueId dropped = ed.graph().add_value(vname + "/squeezed", ed.graph().value(v).dtype);
  sq.outputs = {dropped};
  sq.inputs = {out};
  auto opset = model.opsets.find("");
  if (opset != model.opsets.end() && opset->second < 13) {
    Attribute axes;
    axes.kind = Attribute::Kind::kInts;
    axes.ints = {1};
    sq.attrs.set("axes", axes);
  } else {
    Tensor axes(DType::kInt64, {1});
    axes.data<int64_t>()[0] = 1;
    sq.inputs.push_back(ed.add_initializer(gather.name + "/squeeze_axes", std::move(axes)));
  }
  ed.add_node(std::move(sq));
  return dropped;
}

class GatherRowsEarly : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    // Most graphs have no Gather with constant indices: they skip the shape inference below.
    bool candidate = false;
    for (const Node& n : model.graph.nodes)
      candidate |= is_op(n, "Gather") && n.inputs.size() == 2 && model.graph.initializers.count(n.inputs[1]);
    if (!candidate) return 0;
    const std::vector<ValueMeta>* m0 = ctx.metas(model);
    if (!m0) return 0;
    Probes probes{m0};
    auto distinct = infer_distinct(model, ctx.bindings());
    if (distinct) probes.push_back(&*distinct);
    GraphEditor ed(model.graph);
    int rewrites = 0;
    const int count = ed.num_nodes();
    for (int g = 0; g < count; ++g) {
      if (!ed.alive(g) || !is_op(ed.node(g), "Gather") || ed.node(g).inputs.size() != 2) continue;
      const Node gather = ed.node(g);
      if (!ed.constant(gather.inputs[1])) continue;
      const Shape* ds = shape_in(probes, 0, gather.inputs[0]);
      if (!ds) continue;
      const int rank = int(ds->size());
      int axis = int(gather.attrs.get_int("axis", 0));
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank - 1) continue;
      RegionBuilder rb(ed, probes, g, axis, rank);
      if (!rb.build(gather.inputs[0])) continue;

      // Each value entering the region is gathered once; region nodes are re-created on the
      // gathered rows, the one producing the Gather's data writing the Gather's own output.
      std::map<ValueId, ValueId> rows;
      int shrunk = 0;
      for (ValueId b : rb.boundary()) {
        if (rb.attention_rows(b)) {
          rows[b] = attention_query_rows(ed, model, b, gather);
          ++shrunk;
          continue;
        }
        Node n = gather;
        n.name = gather.name + "/" + ed.graph().value(b).name;
        n.inputs[0] = b;
        const ValueId out = ed.graph().add_value(ed.graph().value(b).name + "/rows", ed.graph().value(b).dtype);
        n.outputs = {out};
        rows[b] = out;
        ed.add_node(std::move(n));
      }
      const ValueId data = gather.inputs[0], result = gather.outputs[0];
      ed.remove_node(g);
      const std::vector<int> order = producers_first(ed, rb.region());
      for (int r : order) {
        Node n = ed.node(r);
        for (int s : rb.row_inputs(r)) n.inputs[size_t(s)] = rows.at(n.inputs[size_t(s)]);
        for (ValueId& o : n.outputs) {
          if (o == kNoValue) continue;
          const ValueId fresh = o == data ? result : ed.graph().add_value(ed.graph().value(o).name + "/rows", ed.graph().value(o).dtype);
          rows[o] = fresh;
          o = fresh;
        }
        n.name += "/rows";
        ed.remove_node(r);
        ed.add_node(std::move(n));
      }
      ctx.note("Gather '" + gather.name + "' moved above " + std::to_string(order.size()) + " position-wise node" +
               (order.size() == 1 ? "" : "s") + " (" + std::to_string(rb.boundary().size() - shrunk) + " gather" +
               (rb.boundary().size() - shrunk == 1 ? "" : "s") + " of their inputs" +
               (shrunk ? ", " + std::to_string(shrunk) + " attention computing only the gathered queries" : "") + ")");
      ++rewrites;
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("gather_rows_early", GatherRowsEarly);

}  // namespace ingot
