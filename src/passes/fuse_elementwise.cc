// Fuses chains and small DAGs of elementwise nodes into one ingot.FusedElementwise node whose
// program (ir/elementwise_program.h) the kernels evaluate per output element, so no
// intermediate is written to memory (BERT's mask chain Cast -> Sub(1, .) -> Mul(., -3.4e38) is
// three passes over [B, 1, 1, S] unfused, one fused).
//
// A group grows backwards from a node whose output leaves the group (read by several nodes, by
// a non-fusable node, or a graph output) through producers whose only reader is a group node,
// while at most kEwMaxInputs distinct values enter it and it has at most kEwMaxSteps nodes.
// It is fused when it has 2+ nodes and shape inference knows every value it touches: all float
// values share one float type (float32/float16/bfloat16), integers (int32/int64) only enter
// through Casts, and the external inputs broadcast to the output's shape (rank <= 8).
// Integer arithmetic is never fused (kept out on purpose: ONNX's wrapping integer ops are rare
// in elementwise chains and would need a second register type in every kernel).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ir/elementwise_program.h"
#include "ir/shape_util.h"
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

bool is_float_type(DType d) { return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16; }

// The opcode and params of a fusable default-domain node, else nullopt. Dtypes are checked
// separately (type_ew_program on the finished program).
std::optional<EwStep> step_of(const Node& n, const std::vector<ValueMeta>& metas) {
  static const std::map<std::string, EwOp> kOps = {
      {"Neg", EwOp::kNeg}, {"Abs", EwOp::kAbs}, {"Sqrt", EwOp::kSqrt}, {"Exp", EwOp::kExp},
      {"Log", EwOp::kLog}, {"Reciprocal", EwOp::kReciprocal}, {"Relu", EwOp::kRelu},
      {"Sigmoid", EwOp::kSigmoid}, {"Tanh", EwOp::kTanh}, {"Erf", EwOp::kErf},
      {"HardSigmoid", EwOp::kHardSigmoid}, {"HardSwish", EwOp::kHardSwish}, {"LeakyRelu", EwOp::kLeakyRelu},
      {"Add", EwOp::kAdd}, {"Sub", EwOp::kSub}, {"Mul", EwOp::kMul}, {"Div", EwOp::kDiv},
      {"Max", EwOp::kMax}, {"Min", EwOp::kMin}, {"Equal", EwOp::kEqual}, {"Less", EwOp::kLess},
      {"Greater", EwOp::kGreater}, {"LessOrEqual", EwOp::kLessEqual}, {"GreaterOrEqual", EwOp::kGreaterEqual},
      {"Not", EwOp::kNot}, {"And", EwOp::kAnd}, {"Or", EwOp::kOr}, {"Where", EwOp::kWhere}, {"Cast", EwOp::kCastFloat},
  };
  if (!n.domain.empty() || n.outputs.size() != 1 || n.outputs[0] == kNoValue) return std::nullopt;
  auto it = kOps.find(n.op_type);
  if (it == kOps.end()) return std::nullopt;
  EwStep s;
  s.op = it->second;
  if (int(n.inputs.size()) != ew_arity(s.op)) return std::nullopt;
  for (ValueId v : n.inputs)
    if (v == kNoValue || size_t(v) >= metas.size() || !metas[size_t(v)].known || metas[size_t(v)].dynamic)
      return std::nullopt;
  const ValueMeta& out = metas[size_t(n.outputs[0])];
  if (!out.known || out.dynamic) return std::nullopt;
  // Integers only as Cast sources; every other value a float or bool.
  auto storable = [](DType d) { return is_float_type(d) || d == DType::kBool; };
  if (!storable(out.dtype)) return std::nullopt;
  for (ValueId v : n.inputs) {
    DType d = metas[size_t(v)].dtype;
    bool int_source = s.op == EwOp::kCastFloat && (d == DType::kInt32 || d == DType::kInt64);
    if (!storable(d) && !int_source) return std::nullopt;
  }
  auto finite = [](float f) { return std::isfinite(f); };
  switch (s.op) {
    case EwOp::kLeakyRelu:
      s.p0 = n.attrs.get_float("alpha", 0.01f);
      if (!finite(s.p0)) return std::nullopt;
      break;
    case EwOp::kHardSigmoid:
      s.p0 = n.attrs.get_float("alpha", 0.2f);
      s.p1 = n.attrs.get_float("beta", 0.5f);
      if (!finite(s.p0) || !finite(s.p1)) return std::nullopt;
      break;
    case EwOp::kCastFloat: {
      // Cast to the float type (from itself, bool or int32/int64) or to bool; anything else
      // (float <-> other float type, to integers) is left alone.
      const DType from = metas[size_t(n.inputs[0])].dtype;
      const Attribute* to = n.attrs.find("to");
      if (!to || to->kind != Attribute::Kind::kInt) return std::nullopt;
      const DType t = DType(to->i);
      if (t == DType::kBool) s.op = EwOp::kCastBool;
      else if (!is_float_type(t) || (is_float_type(from) && from != t)) return std::nullopt;
      break;
    }
    default:
      break;
  }
  return s;
}

class Grouper {
 public:
  Grouper(GraphEditor& ed, const std::vector<ValueMeta>& metas) : ed_(ed), metas_(metas) {}

  // Fuses the group ending at `root`; true when it rewrote the graph.
  bool fuse_from(int root, std::set<int>* visited, std::string* note) {
    std::vector<int> members = {root};
    std::set<int> in_group = {root};
    for (size_t m = 0; m < members.size(); ++m) {
      const Node& mn = ed_.node(members[m]);
      for (ValueId v : mn.inputs) {
        int p = ed_.producer(v);
        if (p < 0 || !ed_.alive(p) || in_group.count(p) || visited->count(p)) continue;
        if (!ed_.only_feeds(v, members[m]) || ed_.read_by_subgraph(v) || !step_of(ed_.node(p), metas_)) continue;
        if (int(members.size()) >= kEwMaxSteps) continue;
        in_group.insert(p);
        if (int(externals(in_group).size()) > kEwMaxInputs) {
          in_group.erase(p);
          continue;
        }
        members.push_back(p);
      }
    }
    if (members.size() < 2) return false;
    std::vector<ValueId> ext = externals(in_group);
    if (int(ext.size()) > kEwMaxInputs) return false;
    // Steps in dependency order (post-order from the root), inputs in first-use order.
    EwProgram prog;
    prog.num_inputs = int(ext.size());
    std::map<ValueId, int> slot;
    for (size_t i = 0; i < ext.size(); ++i) slot[ext[i]] = int(i);
    std::vector<int> order;
    post_order(root, in_group, &order);
    std::string ops;
    for (int k : order) {
      const Node& n = ed_.node(k);
      EwStep s = *step_of(n, metas_);
      for (size_t j = 0; j < n.inputs.size(); ++j) s.in[j] = slot.at(n.inputs[j]);
      slot[n.outputs[0]] = prog.num_inputs + int(prog.steps.size());
      prog.steps.push_back(s);
      ops += (ops.empty() ? "" : " ") + n.op_type;
    }
    // Dtypes: the program's typing must reproduce every node's output dtype.
    std::vector<DType> in_types;
    for (ValueId v : ext) in_types.push_back(metas_[size_t(v)].dtype);
    auto typing = type_ew_program(prog, in_types);
    if (!typing) return false;
    for (int k : order) {
      const ValueMeta& om = metas_[size_t(ed_.node(k).outputs[0])];
      if (!is_float_type(om.dtype) && om.dtype != DType::kBool) return false;
      if (is_float_type(om.dtype) && om.dtype != typing->float_type) return false;
    }
    // Shapes: the inputs broadcast to the output, whose rank the kernels bound.
    const ValueId out = ed_.node(root).outputs[0];
    std::vector<Shape> shapes;
    for (ValueId v : ext) shapes.push_back(metas_[size_t(v)].shape);
    auto b = broadcast_shapes(shapes);
    if (!b || *b != metas_[size_t(out)].shape || b->size() > size_t(kEwMaxRank)) return false;
    // Every node's output dtype must be what the program computes for it.
    if ((typing->out == EwKind::kBool) != (metas_[size_t(out)].dtype == DType::kBool)) return false;

    Node f;
    f.name = ed_.node(root).name + "/fused_elementwise";
    f.op_type = "FusedElementwise";
    f.domain = "ingot";
    f.inputs = ext;
    f.outputs = {out};
    set_ew_program(prog, f.attrs);
    for (int k : members) {
      ed_.remove_node(k);
      visited->insert(k);
    }
    ed_.add_node(std::move(f));
    *note = "fused " + std::to_string(members.size()) + " nodes (" + ops + ") ending at '" + ed_.graph().value(out).name +
            "', " + std::to_string(ext.size()) + " inputs";
    return true;
  }

 private:
  // Values read by group nodes and not produced by one, in first-use order.
  std::vector<ValueId> externals(const std::set<int>& group) const {
    std::vector<int> order;
    int root = -1;
    for (int k : group) {
      // the root is the member whose output is read by no member
      bool read_inside = false;
      for (int c : ed_.consumers(ed_.node(k).outputs[0])) read_inside |= group.count(c) != 0;
      if (!read_inside) root = k;
    }
    post_order(root, group, &order);
    std::vector<ValueId> ext;
    for (int k : order)
      for (ValueId v : ed_.node(k).inputs) {
        int p = ed_.producer(v);
        if ((p >= 0 && group.count(p)) || std::find(ext.begin(), ext.end(), v) != ext.end()) continue;
        ext.push_back(v);
      }
    return ext;
  }

  void post_order(int k, const std::set<int>& group, std::vector<int>* out) const {
    if (std::find(out->begin(), out->end(), k) != out->end()) return;
    for (ValueId v : ed_.node(k).inputs) {
      int p = ed_.producer(v);
      if (p >= 0 && group.count(p)) post_order(p, group, out);
    }
    out->push_back(k);
  }

  GraphEditor& ed_;
  const std::vector<ValueMeta>& metas_;
};

class FuseElementwise : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    const std::vector<ValueMeta>* metas = ctx.metas(model);
    if (!metas) {
      ctx.note("skipped: shape inference failed, so dtypes and broadcast shapes are unknown");
      return 0;
    }
    GraphEditor ed(model.graph);
    Grouper grouper(ed, *metas);
    std::set<int> visited;
    int rewrites = 0;
    // Nodes are in topological order: walking backwards meets every group's last node first.
    for (int i = ed.num_nodes() - 1; i >= 0; --i) {
      if (!ed.alive(i) || visited.count(i) || !step_of(ed.node(i), *metas)) continue;
      std::string note;
      if (grouper.fuse_from(i, &visited, &note)) {
        ++rewrites;
        ctx.note(note);
      }
      visited.insert(i);
    }
    ed.commit();
    return rewrites;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fuse_elementwise", FuseElementwise);

}  // namespace ingot
