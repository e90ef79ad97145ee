// A small graph builder for tests that assemble models node by node: float or integer graph
// inputs with static shapes, scalar and tensor initializers, nodes named after their output or
// after their op and position.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "op_test_util.h"

namespace ingot::testing {

struct GraphBuilder {
  Model m;
  explicit GraphBuilder(const std::string& path, int opset = 20) {
    m.path = path;
    m.ir_version = 8;
    m.opsets[""] = opset;
  }
  ValueId input(const std::string& name, DType dt, const Shape& shape) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = dt;
    SymShape s;
    for (int64_t d : shape) s.push_back(Dim{d, {}});
    m.graph.value(id).shape = s;
    m.graph.inputs.push_back(id);
    return id;
  }
  ValueId scalar(const std::string& name, float v) {
    Tensor t(DType::kFloat32, {});
    t.data<float>()[0] = v;
    return constant(name, std::move(t));
  }
  ValueId constant(const std::string& name, Tensor t) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = t.dtype();
    m.graph.initializers[id] = std::move(t);
    return id;
  }
  ValueId node(const std::string& op, std::vector<ValueId> ins, const std::string& out, Attributes attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = out + "_node";
    n.inputs = std::move(ins);
    ValueId o = m.graph.intern(out);
    n.outputs = {o};
    n.attrs = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
    return o;
  }
  // A node named <op><index> whose one output is <name>_out; a non-default domain is imported.
  ValueId node(const std::string& op, std::vector<ValueId> ins, Attributes attrs = {}, const std::string& domain = "") {
    Node n;
    n.op_type = op;
    n.domain = domain;
    if (!domain.empty()) m.opsets[domain] = 1;
    n.name = op + std::to_string(m.graph.nodes.size());
    n.inputs = std::move(ins);
    n.attrs = std::move(attrs);
    ValueId o = m.graph.intern(n.name + "_out");
    n.outputs = {o};
    m.graph.nodes.push_back(std::move(n));
    return o;
  }
  void output(ValueId v) { m.graph.outputs.push_back(v); }
};

}  // namespace ingot::testing
