// Replaces nodes whose outputs are known before running by initializers: Constant nodes,
// arithmetic on weights, and shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat) once input
// shapes are bound. A value is folded only if shape inference computes the same contents for
// every bound input shape (the opt, min and max of each profile); with no shapes bound, only
// values that do not depend on any graph input are folded. That keeps an engine built for a
// range of shapes correct over the whole range.
#include <cstring>
#include <set>

#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

bool same_contents(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// Values computed, directly or through Shape, from graph inputs.
std::set<ValueId> input_dependent(const Graph& g) {
  std::set<ValueId> dep(g.inputs.begin(), g.inputs.end());
  for (ValueId c : g.captures) dep.insert(c);
  GraphEditor ed(const_cast<Graph&>(g));
  std::vector<ValueId> work(dep.begin(), dep.end());
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    for (int c : ed.consumers(v))
      for (ValueId o : ed.node(c).outputs)
        if (o != kNoValue && dep.insert(o).second) work.push_back(o);
  }
  return dep;
}

class FoldConstants : public Pass {
 public:
  Expected<int> run(Model& model, PassContext& ctx) const override {
    Graph& g = model.graph;
    std::vector<ShapeBinding> bindings = ctx.bindings();
    std::set<ValueId> excluded;
    if (bindings.empty()) {
      // No shapes bound: probe with unknown dims set to 1, fold only input-independent values.
      bindings.push_back(probe_binding(model));
      excluded = input_dependent(g);
    }
    bool probing = ctx.bindings().empty();
    std::vector<std::vector<ValueMeta>> metas;
    for (const auto& b : bindings) {
      auto m = infer_with(model, b);
      if (!m) {
        // A probe with dims of 1 may not fit the model (a minimum length, say): fold nothing
        // rather than fail; real shapes are checked when the engine runs.
        if (probing) return 0;
        return m.status();
      }
      metas.push_back(std::move(*m));
    }
    GraphEditor ed(g);
    int folded = 0;
    for (int i = 0; i < ed.num_nodes(); ++i) {
      const Node& n = ed.node(i);
      bool foldable = !n.outputs.empty();
      for (ValueId o : n.outputs) {
        if (o == kNoValue) continue;
        if (excluded.count(o) || ed.read_by_subgraph(o) || ed.is_graph_output(o)) foldable = false;
        for (const auto& m : metas) {
          if (!foldable) break;
          const auto& vm = m[size_t(o)];
          if (!vm.value || !same_contents(*vm.value, *metas[0][size_t(o)].value)) foldable = false;
        }
      }
      if (!foldable) continue;
      for (ValueId o : n.outputs) {
        if (o == kNoValue) continue;
        // The value keeps its id and name; it becomes an initializer.
        g.initializers[o] = metas[0][size_t(o)].value->clone();
        g.value(o).dtype = g.initializers[o].dtype();
      }
      ed.remove_node(i);
      ++folded;
    }
    ed.commit();
    return folded;
  }
};

}  // namespace

INGOT_REGISTER_PASS("fold_constants", FoldConstants);

}  // namespace ingot
