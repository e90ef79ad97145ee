#include "passes/float_io.h"

#include <set>

#include "ir/graph_editor.h"

namespace ingot {

namespace {

void add_cast(GraphEditor& ed, ValueId in, ValueId out, DType to, const std::string& name) {
  Node n;
  n.name = name;
  n.op_type = "Cast";
  n.inputs = {in};
  n.outputs = {out};
  n.attrs.set_int("to", int64_t(to));
  ed.add_node(std::move(n));
}

// A float32 twin of `v` (same shape) for the model's own float32 computation at the boundary.
ValueId add_float32_twin(Graph& g, ValueId v) {
  const std::string name = g.value(v).name;
  const auto shape = g.value(v).shape;
  ValueId twin = g.add_value(name + "/float32", DType::kFloat32);
  g.value(twin).shape = shape;
  return twin;
}

}  // namespace

Expected<RetypedIo> retype_float_io(Model& model, DType io) {
  if (io != DType::kFloat16) return invalid_argument("io precision must be float16, not " + dtype_name(io));
  Graph& g = model.graph;
  GraphEditor ed(g);
  auto is_f32 = [&](ValueId v) { return g.value(v).dtype == DType::kFloat32; };
  // Refuse before editing anything.
  for (const auto* list : {&g.inputs, &g.outputs})
    for (ValueId v : *list)
      if (is_f32(v) && ed.read_by_subgraph(v))
        return unsupported(model.path + ": '" + g.value(v).name +
                           "' is read by name inside a subgraph (If/Loop/Scan), so its dtype cannot change: "
                           "build without --io-precision fp16");
  const std::set<ValueId> inputs(g.inputs.begin(), g.inputs.end());
  for (ValueId y : g.outputs)
    if (is_f32(y) && !inputs.count(y) && ed.producer(y) < 0 && !g.initializers.count(y))
      return invalid_model(model.path + ": output '" + g.value(y).name + "' is neither computed by a node nor a constant");
  RetypedIo done;
  for (ValueId x : g.inputs) {
    if (!is_f32(x)) continue;
    const std::vector<int> readers = ed.consumers(x);
    const ValueId wide = add_float32_twin(g, x);
    for (int r : readers)
      for (ValueId& in : ed.node(r).inputs)
        if (in == x) in = wide;
    add_cast(ed, x, wide, DType::kFloat32, g.value(x).name + "/to_float32");
    g.value(x).dtype = io;
    done.inputs.push_back(g.value(x).name);
  }
  for (ValueId y : g.outputs) {
    if (!is_f32(y)) continue;  // also an output listed twice, or an input passed through: retyped already
    const std::vector<int> readers = ed.consumers(y);
    const int p = ed.producer(y);
    auto init = g.initializers.find(y);
    const ValueId narrow_from = add_float32_twin(g, y);
    if (p >= 0) {
      ed.set_output(p, y, narrow_from);
    } else {
      Tensor t = std::move(init->second);
      g.initializers.erase(init);
      g.initializers[narrow_from] = std::move(t);
    }
    for (int r : readers)
      for (ValueId& in : ed.node(r).inputs)
        if (in == y) in = narrow_from;
    add_cast(ed, narrow_from, y, io, g.value(y).name + "/to_" + dtype_name(io));
    g.value(y).dtype = io;
    done.outputs.push_back(g.value(y).name);
  }
  ed.commit();  // puts the Casts in order
  return done;
}

}  // namespace ingot
