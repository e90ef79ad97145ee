// The rewrite half of fuse_attention: the liveness check that makes a fusion safe, the node
// it creates, and the probe shapes the matcher verifies layouts with.
#include <map>

#include "passes/fuse_attention_internal.h"

namespace ingot::attn {

// Nodes that only fed the block's shape computations (Shape of an intermediate) go too.
bool rewrite(GraphEditor& ed, const Plan& plan, const std::string& name, std::string& why) {
  std::vector<ValueId> work(ed.graph().outputs.begin(), ed.graph().outputs.end());
  work.push_back(plan.x);
  work.push_back(plan.mask);
  for (ValueId v = 0; v < ValueId(ed.graph().values.size()); ++v)
    if (ed.read_by_subgraph(v)) work.push_back(v);
  std::vector<char> live(size_t(ed.num_nodes()));
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    int p = v == kNoValue ? -1 : ed.producer(v);
    if (p < 0 || !ed.alive(p)) continue;
    if (plan.nodes.count(p)) {
      if (v != plan.out) return why = "'" + ed.graph().value(v).name + "' inside the block is read outside it", false;
      continue;
    }
    if (live[size_t(p)]) continue;
    live[size_t(p)] = 1;
    for (ValueId i : ed.node(p).inputs) work.push_back(i);
  }
  if (ed.read_by_subgraph(plan.out)) return why = "block output is read by a subgraph", false;
  std::set<int> dead;
  for (int n : plan.nodes)
    for (ValueId o : ed.node(n).outputs)
      if (o != kNoValue && o != plan.out) work.push_back(o);
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    for (int c : ed.consumers(v))
      if (!plan.nodes.count(c) && dead.insert(c).second)
        for (ValueId o : ed.node(c).outputs)
          if (o != kNoValue) work.push_back(o);
  }
  for (int n : plan.nodes) ed.remove_node(n);
  for (int n : dead) ed.remove_node(n);
  Node node;
  node.name = name;
  node.op_type = "Attention";
  node.domain = "ingot";
  auto init = [&](const Tensor& t, const char* hint) {
    return t.defined() ? ed.add_initializer(name + "/" + hint, t) : kNoValue;
  };
  node.inputs = {plan.x, init(plan.wqkv, "W_qkv"), init(plan.bqkv, "b_qkv"), plan.mask, init(plan.wout, "W_out"),
                 init(plan.bout, "b_out")};
  while (node.inputs.back() == kNoValue) node.inputs.pop_back();
  node.outputs = {plan.out};
  auto attr_i = [](int64_t v) { Attribute a; a.kind = Attribute::Kind::kInt; a.i = v; return a; };
  auto attr_f = [](float v) { Attribute a; a.kind = Attribute::Kind::kFloat; a.f = v; return a; };
  Attribute kind;
  kind.kind = Attribute::Kind::kString;
  kind.s = plan.mask_kind;
  node.attrs.set("num_heads", attr_i(plan.heads));
  node.attrs.set("scale", attr_f(float(plan.scale)));
  node.attrs.set("causal", attr_i(0));
  node.attrs.set("mask_kind", kind);
  if (plan.mask_kind == "bool") node.attrs.set("mask_filter_value", attr_f(plan.filter));
  node.attrs.set("nan_to_zero", attr_i(plan.nan_to_zero));
  ed.add_node(std::move(node));
  return true;
}

}  // namespace ingot::attn
