// The index arithmetic of ops that read a strided view of their input (Slice, DepthToSpace,
// SpaceToDepth), kept in one place: the CPU kernels copy through these views, and the CUDA
// kernels (backends/cuda/tensor_slice.cc, tensor_layout.cc) turn the same views into device
// copies, so both backends read the same elements and refuse the same parameters.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace ingot::tensor_ops {

// Slice's view of an input: the output's shape, and for each input axis the first index read
// and the step between reads (1 on axes the slice leaves whole).
struct SliceView {
  Shape out;
  std::vector<int64_t> start, step;
};

// The view that starts/ends (and axes, steps where given) select from an input of shape `in`, by
// the ONNX rules: negative indices count from the end, out-of-range ones clamp, a step beyond
// the axis takes one element. Refuses lists of different lengths, a repeated axis, a 0 step.
Expected<SliceView> slice_view(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                               const std::vector<int64_t>* axes, const std::vector<int64_t>* steps);

// Slice's parameters: attributes before opset 10, inputs 1-4 (starts, ends, axes, steps) from it on.
class SliceParams {
 public:
  Status init(const Node& node, int opset);
  bool from_attributes() const { return from_attr_; }
  // The view of an input of shape `in`; v[1..4] are the parameter inputs (null when absent), read
  // only when the parameters are not attributes.
  Expected<SliceView> view(const Shape& in, const Tensor* const* v) const;

 private:
  bool from_attr_ = false, has_axes_ = false;
  std::vector<int64_t> starts_, ends_, axes_;
};

// DepthToSpace (to_space) and SpaceToDepth on an NCHW input of shape `in` with block size b, as a
// reshape to 6-D, a transpose and a reshape: the 6-D shape and the transpose's permutation.
// `crd`: DepthToSpace's CRD mode (DCR otherwise). The caller has checked the shape's divisibility.
struct SpaceDepthView {
  Shape shape6;
  std::vector<int> perm;
};
SpaceDepthView space_depth_view(const Shape& in, int64_t b, bool to_space, bool crd);

}  // namespace ingot::tensor_ops
