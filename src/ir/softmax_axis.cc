#include "ir/softmax_axis.h"

#include "ir/shape_util.h"

namespace ingot {

void SoftmaxAxis::init(const Node& node, int opset) {
  legacy_ = opset < 13;
  axis_ = node.attrs.get_int("axis", legacy_ ? 1 : -1);
}

Expected<SoftmaxSplit> SoftmaxAxis::split(const Shape& s) const {
  const int rank = int(s.size());
  // A scalar has nothing to normalise over; ONNX allows rank >= 1 only.
  if (rank == 0) return invalid_argument("input 0 (input) is a scalar; expected rank >= 1");
  INGOT_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, rank, "axis"));
  SoftmaxSplit sp;
  for (int i = 0; i < axis; ++i) sp.outer *= s[size_t(i)];
  if (legacy_) {
    for (int i = axis; i < rank; ++i) sp.n *= s[size_t(i)];
  } else {
    sp.n = s[size_t(axis)];
    for (int i = axis + 1; i < rank; ++i) sp.inner *= s[size_t(i)];
  }
  return sp;
}

}  // namespace ingot
