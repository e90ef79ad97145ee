#include "ir/graph_editor.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <set>

namespace ingot {

GraphEditor::GraphEditor(Graph& g) : g_(g) {
  alive_.assign(g_.nodes.size(), true);
  for (int i = 0; i < int(g_.nodes.size()); ++i) index_node(i);
}

void GraphEditor::index_node(int idx) {
  if (producer_.size() < g_.values.size()) {
    producer_.resize(g_.values.size(), -1);
    consumers_.resize(g_.values.size());
  }
  const Node& n = g_.nodes[size_t(idx)];
  for (ValueId o : n.outputs) if (o != kNoValue) producer_[size_t(o)] = idx;
  auto add_reader = [&](ValueId v) {
    auto& c = consumers_[size_t(v)];
    if (std::find(c.begin(), c.end(), idx) == c.end()) c.push_back(idx);
  };
  for (ValueId i : n.inputs) if (i != kNoValue) add_reader(i);
  // A node whose subgraph captures one of this graph's values reads it too.
  std::function<void(const Graph&)> captures = [&](const Graph& sub) {
    for (ValueId c : sub.captures) {
      ValueId mine = g_.find(sub.value(c).name);
      if (mine != kNoValue) {
        add_reader(mine);
        subgraph_read_.insert(mine);
      }
    }
    for (const Node& sn : sub.nodes)
      for (const auto& [k, a] : sn.attrs.all()) {
        if (a.g) captures(*a.g);
        for (const auto& sg : a.graphs) captures(*sg);
      }
  };
  for (const auto& [k, a] : n.attrs.all()) {
    if (a.g) captures(*a.g);
    for (const auto& sg : a.graphs) captures(*sg);
  }
}

bool GraphEditor::read_by_subgraph(ValueId v) const { return subgraph_read_.count(v) != 0; }

int GraphEditor::producer(ValueId v) const {
  return size_t(v) < producer_.size() ? producer_[size_t(v)] : -1;
}

const std::vector<int>& GraphEditor::consumers(ValueId v) const {
  static const std::vector<int> kNone;
  return size_t(v) < consumers_.size() ? consumers_[size_t(v)] : kNone;
}

bool GraphEditor::is_graph_output(ValueId v) const {
  return std::find(g_.outputs.begin(), g_.outputs.end(), v) != g_.outputs.end();
}

bool GraphEditor::only_feeds(ValueId v, int node_idx) const {
  const auto& c = consumers(v);
  return c.size() == 1 && c[0] == node_idx && !is_graph_output(v);
}

const Tensor* GraphEditor::constant(ValueId v) const {
  auto it = g_.initializers.find(v);
  return it == g_.initializers.end() ? nullptr : &it->second;
}

ValueId GraphEditor::add_initializer(const std::string& hint, Tensor t) {
  ValueId id = g_.add_value(hint, t.dtype());
  SymShape s;
  for (int64_t d : t.shape()) s.push_back(Dim{d, {}});
  g_.value(id).shape = s;
  g_.initializers[id] = std::move(t);
  return id;
}

int GraphEditor::add_node(Node n) {
  g_.nodes.push_back(std::move(n));
  alive_.push_back(true);
  int idx = int(g_.nodes.size()) - 1;
  index_node(idx);
  return idx;
}

void GraphEditor::remove_node(int idx) {
  if (!alive_[size_t(idx)]) return;
  alive_[size_t(idx)] = false;
  const Node& n = g_.nodes[size_t(idx)];
  for (ValueId i : n.inputs) {
    if (i == kNoValue) continue;
    auto& c = consumers_[size_t(i)];
    c.erase(std::remove(c.begin(), c.end(), idx), c.end());
  }
  for (ValueId o : n.outputs)
    if (o != kNoValue && producer_[size_t(o)] == idx) producer_[size_t(o)] = -1;
}

void GraphEditor::replace_uses(ValueId from, ValueId to) {
  if (from == to) return;
  assert(!read_by_subgraph(from) && "subgraphs read values by name; callers must check");
  std::vector<int> readers = consumers(from);
  for (int r : readers) {
    for (ValueId& i : g_.nodes[size_t(r)].inputs) if (i == from) i = to;
    auto& c = consumers_[size_t(to)];
    if (std::find(c.begin(), c.end(), r) == c.end()) c.push_back(r);
  }
  consumers_[size_t(from)].clear();
  for (ValueId& o : g_.outputs) if (o == from) o = to;
}

void GraphEditor::set_output(int idx, ValueId from, ValueId to) {
  for (ValueId& o : g_.nodes[size_t(idx)].outputs)
    if (o == from) o = to;
  if (producer_.size() < g_.values.size()) {
    producer_.resize(g_.values.size(), -1);
    consumers_.resize(g_.values.size());
  }
  if (producer_[size_t(from)] == idx) producer_[size_t(from)] = -1;
  producer_[size_t(to)] = idx;
}

void GraphEditor::commit() {
  // Keep live nodes in a topological order (stable: file order where dependencies allow), so
  // the graph stays valid ONNX when written out; fused nodes were appended at the end.
  size_t n = g_.nodes.size();
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i) {
    if (!alive_[i]) continue;
    std::set<int> deps;
    for (ValueId in : g_.nodes[i].inputs) {
      int p = in == kNoValue ? -1 : producer(in);
      if (p >= 0 && p != int(i) && alive_[size_t(p)]) deps.insert(p);
    }
    indegree[i] = int(deps.size());
    for (int p : deps) users[size_t(p)].push_back(int(i));
  }
  // Subgraph captures order their readers after the captured values' producers too.
  for (size_t v = 0; v < consumers_.size(); ++v) {
    if (!subgraph_read_.count(ValueId(v))) continue;
    int p = producer(ValueId(v));
    if (p < 0 || !alive_[size_t(p)]) continue;
    for (int c : consumers_[v]) {
      bool direct = false;
      for (ValueId in : g_.nodes[size_t(c)].inputs) direct |= in == ValueId(v);
      if (!direct && c != p) {
        users[size_t(p)].push_back(c);
        ++indegree[size_t(c)];
      }
    }
  }
  std::set<int> ready;
  for (size_t i = 0; i < n; ++i) if (alive_[i] && indegree[i] == 0) ready.insert(int(i));
  std::vector<Node> kept;
  std::vector<bool> emitted(n, false);
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    emitted[size_t(i)] = true;
    kept.push_back(std::move(g_.nodes[size_t(i)]));
    for (int u : users[size_t(i)]) if (--indegree[size_t(u)] == 0) ready.insert(u);
  }
  // A cycle (which no pass should create) keeps the remaining nodes in file order; the
  // executor reports it with the node's name.
  for (size_t i = 0; i < n; ++i)
    if (alive_[i] && !emitted[i]) kept.push_back(std::move(g_.nodes[i]));
  g_.nodes = std::move(kept);
  // Initializers still read by a node, a graph output or a subgraph capture survive.
  std::set<std::string> read;
  std::function<void(const Graph&)> collect = [&](const Graph& g) {
    for (const Node& n : g.nodes) {
      for (ValueId i : n.inputs) if (i != kNoValue) read.insert(g.value(i).name);
      for (const auto& [k, a] : n.attrs.all()) {
        if (a.g) collect(*a.g);
        for (const auto& sg : a.graphs) collect(*sg);
      }
    }
    for (ValueId o : g.outputs) read.insert(g.value(o).name);
  };
  collect(g_);
  for (auto it = g_.initializers.begin(); it != g_.initializers.end();) {
    if (!read.count(g_.value(it->first).name)) it = g_.initializers.erase(it);
    else ++it;
  }
  alive_.assign(g_.nodes.size(), true);
  producer_.assign(g_.values.size(), -1);
  consumers_.assign(g_.values.size(), {});
  subgraph_read_.clear();
  for (int i = 0; i < int(g_.nodes.size()); ++i) index_node(i);
}

}  // namespace ingot
