// Shape arithmetic shared by shape inference and kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"

namespace ingot {

// Numpy-style multidirectional broadcast of any number of shapes.
Expected<Shape> broadcast_shapes(const std::vector<Shape>& shapes);
// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s);
// Strides of `in` as seen from a broadcast `out` shape: 0 where `in` is broadcast.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);
// Maps a possibly negative axis into [0, rank); error names the attribute.
Expected<int> normalize_axis(int64_t axis, int rank, const std::string& what = "axis");
// The logical [N, C, spatial...] shape of a tensor stored channels-last ([N, spatial..., C])
// when `channels_last` (the layout fuse_conv_activation gives conv and pool edges); else s.
Shape channels_first_shape(const Shape& s, bool channels_last);

}  // namespace ingot
