// Removes nodes none of whose outputs is read by another node or is a graph output.
#include "passes/match.h"
#include "passes/pass.h"

namespace ingot {
namespace {

class EliminateDeadCode : public Pass {
 public:
  Expected<int> run(Model& model, PassContext&) const override {
    GraphEditor ed(model.graph);
    int removed = 0;
    // Walk backwards so a chain of dead nodes goes in one sweep.
    for (bool changed = true; changed;) {
      changed = false;
      for (int i = ed.num_nodes() - 1; i >= 0; --i) {
        if (!ed.alive(i)) continue;
        bool used = false;
        for (ValueId o : ed.node(i).outputs)
          if (o != kNoValue && (!ed.consumers(o).empty() || ed.is_graph_output(o))) used = true;
        // Subgraph captures count as reads: keep producers of values a subgraph may read.
        if (used) continue;
        ed.remove_node(i);
        ++removed;
        changed = true;
      }
    }
    ed.commit();
    return removed;
  }
};

}  // namespace

INGOT_REGISTER_PASS("eliminate_dead_code", EliminateDeadCode);

}  // namespace ingot
