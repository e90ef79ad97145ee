#include "plan/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace ingot {
namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Buffer {
  int64_t bytes = 0;
  int first = 0, last = 0;  // execution positions: defined at `first`, last read at `last`
  int64_t offset = -1;
};

int find_root(std::vector<int>& parent, int v) {
  while (parent[size_t(v)] != v) v = parent[size_t(v)] = parent[size_t(parent[size_t(v)])];
  return v;
}

}  // namespace

MemoryPlan plan_memory(const PlanInput& in) {
  const Graph& g = *in.graph;
  size_t nv = g.values.size();
  MemoryPlan plan;
  plan.offset.assign(nv, MemoryPlan::kNotPlanned);
  plan.capacity.assign(nv, 0);

  std::vector<bool> excluded(nv, false);  // never in the arena
  for (ValueId o : g.outputs) excluded[size_t(o)] = true;
  for (ValueId i : g.inputs) excluded[size_t(i)] = true;
  for (ValueId c : g.captures) excluded[size_t(c)] = true;
  for (const auto& [id, t] : g.initializers) excluded[size_t(id)] = true;

  // Alias groups: a view output joins its input's buffer. A group touching an excluded value
  // (a view of a graph input, or a graph output that is a view) stays out of the arena.
  std::vector<int> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> def(nv, -1), last(nv, -1);
  for (size_t pos = 0; pos < in.order.size(); ++pos) {
    int ni = in.order[pos];
    const Node& n = g.nodes[size_t(ni)];
    for (ValueId v : n.inputs) if (v != kNoValue) last[size_t(v)] = int(pos);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      ValueId v = n.outputs[o];
      if (v == kNoValue) continue;
      def[size_t(v)] = int(pos);
      int a = size_t(ni) < in.alias.size() && o < in.alias[size_t(ni)].size() ? in.alias[size_t(ni)][o] : -1;
      if (a >= 0 && size_t(a) < n.inputs.size() && n.inputs[size_t(a)] != kNoValue) {
        int ra = find_root(parent, n.inputs[size_t(a)]), rb = find_root(parent, v);
        parent[size_t(rb)] = ra;
      }
    }
  }
  // In place: an output joins the buffer of the input its kernel may overwrite when that input's
  // group is read by nothing after this node and both have the same size. Chains (Relu then
  // Sigmoid then ...) then all run in one buffer.
  if (!in.in_place.empty()) {
    std::vector<int> group_last(nv, -1);
    for (size_t v = 0; v < nv; ++v) {
      int r = find_root(parent, int(v));
      group_last[size_t(r)] = std::max(group_last[size_t(r)], std::max(last[v], def[v]));
    }
    for (size_t pos = 0; pos < in.order.size(); ++pos) {
      int ni = in.order[pos];
      const Node& n = g.nodes[size_t(ni)];
      if (size_t(ni) >= in.in_place.size()) continue;
      for (size_t o = 0; o < n.outputs.size() && o < in.in_place[size_t(ni)].size(); ++o) {
        int i = in.in_place[size_t(ni)][o];
        ValueId out = n.outputs[o];
        if (i < 0 || size_t(i) >= n.inputs.size() || out == kNoValue || n.inputs[size_t(i)] == kNoValue) continue;
        ValueId src = n.inputs[size_t(i)];
        int rs = find_root(parent, src), ro = find_root(parent, out);
        if (rs == ro || excluded[size_t(src)] || excluded[size_t(out)]) continue;
        if (in.max_bytes[size_t(src)] < 0 || in.max_bytes[size_t(src)] != in.max_bytes[size_t(out)]) continue;
        if (group_last[size_t(rs)] != int(pos)) continue;  // someone reads the input later
        // The input may appear twice among the node's inputs (x * x): still read at this node only.
        parent[size_t(ro)] = rs;
        group_last[size_t(rs)] = std::max(group_last[size_t(rs)], group_last[size_t(ro)]);
      }
    }
  }

  // Values read by subgraphs are read by name at unknown times: keep them out too.
  for (const Node& n : g.nodes)
    for (const auto& [k, a] : n.attrs.all()) {
      std::vector<const Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const auto& sg : a.graphs) subs.push_back(sg.get());
      for (const Graph* sg : subs)
        for (ValueId c : sg->captures) {
          ValueId mine = g.find(sg->value(c).name);
          if (mine != kNoValue) excluded[size_t(mine)] = true;
        }
    }

  std::vector<Buffer> buffers(nv);
  std::vector<bool> group_ok(nv, true), group_used(nv, false);
  for (size_t v = 0; v < nv; ++v) {
    if (def[v] < 0 && !excluded[v]) continue;  // never produced (unused name)
    int r = find_root(parent, int(v));
    Buffer& b = buffers[size_t(r)];
    if (excluded[v] || in.max_bytes[v] < 0) group_ok[size_t(r)] = false;
    if (!group_used[size_t(r)]) {
      b.first = def[v] < 0 ? 0 : def[v];
      b.last = std::max(def[v], last[v]);
      group_used[size_t(r)] = true;
    } else {
      b.first = std::min(b.first, def[v] < 0 ? 0 : def[v]);
      b.last = std::max(b.last, std::max(def[v], last[v]));
    }
    b.bytes = std::max(b.bytes, align_up(std::max<int64_t>(in.max_bytes[v], 0)));
  }

  std::vector<int> roots;
  for (size_t r = 0; r < nv; ++r)
    if (group_used[r] && group_ok[r] && parent[r] == int(r) && buffers[r].bytes > 0) roots.push_back(int(r));
  // Largest first, then earliest: the classic greedy-by-size placement.
  std::sort(roots.begin(), roots.end(), [&](int a, int b) {
    if (buffers[size_t(a)].bytes != buffers[size_t(b)].bytes) return buffers[size_t(a)].bytes > buffers[size_t(b)].bytes;
    return buffers[size_t(a)].first < buffers[size_t(b)].first;
  });
  std::vector<int> placed;
  for (int r : roots) {
    Buffer& b = buffers[size_t(r)];
    // Intervals of already placed buffers alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int p : placed) {
      const Buffer& o = buffers[size_t(p)];
      if (o.last < b.first || b.last < o.first) continue;
      busy.push_back({o.offset, o.offset + o.bytes});
    }
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [s, e] : busy) {
      if (off + b.bytes <= s) break;
      off = std::max(off, e);
    }
    b.offset = off;
    plan.arena_bytes = std::max(plan.arena_bytes, off + b.bytes);
    plan.intermediate_bytes += b.bytes;
    placed.push_back(r);
  }
  for (size_t v = 0; v < nv; ++v) {
    if (!group_used[v] && def[v] < 0) continue;
    int r = find_root(parent, int(v));
    if (!group_ok[size_t(r)] || buffers[size_t(r)].offset < 0) continue;
    plan.offset[v] = buffers[size_t(r)].offset;
    plan.capacity[v] = buffers[size_t(r)].bytes;
    ++plan.planned_values;
  }
  return plan;
}

}  // namespace ingot
