// The small pattern-matching vocabulary passes share, so no pass re-implements "is v produced
// by an Add whose other operand is a constant scalar".
#pragma once

#include <optional>
#include <string_view>

#include "ir/graph_editor.h"

namespace ingot {

inline bool is_op(const Node& n, std::string_view op, std::string_view domain = "") {
  return n.op_type == op && n.domain == domain;
}

// The live node producing v when it is `op` (default domain), else -1.
inline int producer_if(const GraphEditor& ed, ValueId v, std::string_view op) {
  if (v == kNoValue) return -1;
  int p = ed.producer(v);
  return p >= 0 && ed.alive(p) && is_op(ed.node(p), op) ? p : -1;
}

// The single live consumer of v when it is `op` and v feeds nothing else, else -1.
inline int sole_consumer_if(const GraphEditor& ed, ValueId v, std::string_view op) {
  const auto& c = ed.consumers(v);
  if (c.size() != 1 || ed.is_graph_output(v)) return -1;
  return is_op(ed.node(c[0]), op) ? c[0] : -1;
}

// The value of a one-element constant (initializer), as double.
inline std::optional<double> scalar_constant(const GraphEditor& ed, ValueId v) {
  const Tensor* t = v == kNoValue ? nullptr : ed.constant(v);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->scalar_as_double(0);
}

// For a two-input node, the input that is not v (kNoValue if v is not an input).
inline ValueId other_input(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return kNoValue;
}

inline bool near(double a, double b, double tol = 1e-4) { return a > b - tol && a < b + tol; }

}  // namespace ingot
