// Editing a Graph in place for optimizer passes: who produces and who reads each value, adding
// and removing nodes, rewiring uses. Removed nodes are dropped by commit(); value ids stay
// stable (unused values are harmless; unused initializers are freed by commit()).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ingot {

class GraphEditor {
 public:
  explicit GraphEditor(Graph& g);

  Graph& graph() { return g_; }
  const Graph& graph() const { return g_; }
  const Node& node(int idx) const { return g_.nodes[size_t(idx)]; }
  Node& node(int idx) { return g_.nodes[size_t(idx)]; }
  int num_nodes() const { return int(g_.nodes.size()); }
  bool alive(int idx) const { return alive_[size_t(idx)]; }

  int producer(ValueId v) const;                        // node index, or -1
  const std::vector<int>& consumers(ValueId v) const;  // live node indices reading v
  bool is_graph_output(ValueId v) const;
  // True when v is read by exactly one live node and is not a graph output: safe to fuse away.
  bool only_feeds(ValueId v, int node_idx) const;
  const Tensor* constant(ValueId v) const;  // initializer contents, or null
  // True when a subgraph (If/Loop/Scan body) reads v by name: v cannot be renamed.
  bool read_by_subgraph(ValueId v) const;

  ValueId add_initializer(const std::string& hint, Tensor t);
  int add_node(Node n);
  void remove_node(int idx);
  // Every reader of `from` (and the graph outputs) reads `to` instead.
  void replace_uses(ValueId from, ValueId to);
  // Node idx writes `to` where it wrote `from` (`to` must have no other producer).
  void set_output(int idx, ValueId from, ValueId to);
  // Drops removed nodes and initializers nothing reads any more.
  void commit();

 private:
  void index_node(int idx);
  Graph& g_;
  std::vector<bool> alive_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::set<ValueId> subgraph_read_;
};

}  // namespace ingot
