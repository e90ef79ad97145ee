// Runs one graph on the CPU backend: kernels created once at load, then per run each node's
// infer() gives its output shapes and compute() fills them. Also does build-time shape
// inference with constant folding (shape subgraphs collapse once input shapes are bound).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "plan/memory_plan.h"
#include "runtime/kernel.h"

namespace ingot {

// Resolves a captured outer-scope value by name (null if unknown).
using OuterLookup = std::function<const Tensor*(const std::string&)>;

// What shape inference learned about one value.
struct ValueMeta {
  bool known = false;  // dtype (and shape unless dynamic) are set
  DType dtype = DType::kUndefined;
  Shape shape;
  bool dynamic = false;  // shape depends on data not known before running
  std::shared_ptr<const Tensor> value;  // constant contents, when folded
};

class GraphExecutor {
 public:
  // `prepare_constants`: hand constant inputs to kernels for weight pre-packing. Executors
  // made only to infer shapes skip it: packing a BERT's weights costs hundreds of MB of copies.
  static Expected<std::unique_ptr<GraphExecutor>> create(const Graph& graph,
                                                          const std::map<std::string, int64_t>& opsets,
                                                          const std::string& backend = "cpu",
                                                          bool prepare_constants = true);

  const Graph& graph() const { return graph_; }

  // Runs with the graph's formal inputs in order. Thread-safe: kernels are immutable. With a
  // plan, intermediate values live in `arena` (plan->arena_bytes, owned by the caller);
  // outputs are always fresh heap tensors.
  Expected<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const OuterLookup& outer,
                                    const MemoryPlan* plan = nullptr, std::byte* arena = nullptr) const;

  // What the memory planner needs: execution order, value sizes, view aliasing.
  PlanInput plan_input(const std::vector<int64_t>& max_bytes) const;
  const std::vector<int>& order() const { return order_; }

  // Shape inference for bound input shapes (dtype and shape per formal input; a value too,
  // where known). Returns one ValueMeta per ValueId. Small results are folded to constants.
  Expected<std::vector<ValueMeta>> infer(const std::vector<ValueMeta>& inputs) const;

 private:
  GraphExecutor(const Graph& g) : graph_(g) {}
  Status prepare(const std::map<std::string, int64_t>& opsets, const std::string& backend, bool prepare_constants);
  Status run_node(size_t order_index, std::vector<Tensor>& env, const OuterLookup& outer,
                  const MemoryPlan* plan, std::byte* arena) const;
  SubgraphRunner subgraph_runner(const std::vector<Tensor>& env, const OuterLookup& outer) const;

  const Graph& graph_;
  std::vector<int> order_;  // node indices in execution order
  std::vector<std::unique_ptr<OpKernel>> kernels_;  // per node index
  std::map<const Graph*, std::unique_ptr<GraphExecutor>> subgraphs_;
  std::vector<std::vector<ValueId>> frees_;  // per order position: values dead after it
};

}  // namespace ingot
