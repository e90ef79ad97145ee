// The static memory plan: every intermediate activation gets an offset in one arena, sized for
// the largest shapes the engine serves. Values whose lifetimes do not overlap share bytes;
// graph outputs and weights are never placed in the arena (outputs are handed to the caller,
// weights live with the engine). Reshape-like ops that return a view of their input share the
// input's buffer, and the buffer lives until the last reader of either. Elementwise maps whose
// input dies at them write their output over it (in place), when both have the same size.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ingot {

struct MemoryPlan {
  static constexpr int64_t kNotPlanned = -1;
  std::vector<int64_t> offset;    // per ValueId: byte offset in the arena, or kNotPlanned
  std::vector<int64_t> capacity;  // per ValueId: bytes reserved at that offset
  int64_t arena_bytes = 0;
  int64_t intermediate_bytes = 0;  // what the planned values would take without any reuse
  int planned_values = 0;
};

struct PlanInput {
  const Graph* graph = nullptr;
  std::vector<int> order;              // node indices in execution order
  std::vector<int64_t> max_bytes;      // per ValueId: largest size in bytes, or -1 if unknown
  std::vector<std::vector<int>> alias; // per node index: per output, the aliased input index or -1
  // per node index: per output, the input it may overwrite (OpKernel::output_may_overwrite_input)
  // or -1; empty: no in-place placement
  std::vector<std::vector<int>> in_place;
};

MemoryPlan plan_memory(const PlanInput& in);

}  // namespace ingot
