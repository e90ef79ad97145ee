// Softmax, LogSoftmax and Hardmax's `axis`, parsed once for every backend's kernel: the input
// as an [outer, n, inner] problem. Before opset 13 the input is coerced to 2-D at `axis`
// (default 1; n is everything from it on, inner = 1); from opset 13 the op works along `axis`
// alone (default -1).
#pragma once

#include <cstdint>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

struct SoftmaxSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

class SoftmaxAxis {
 public:
  void init(const Node& node, int opset);
  // The split of an input of shape `s`; refuses a scalar and an axis outside the rank.
  Expected<SoftmaxSplit> split(const Shape& s) const;

 private:
  bool legacy_ = false;
  int64_t axis_ = -1;
};

}  // namespace ingot
