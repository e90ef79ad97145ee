// MaxRoiPool (Fast R-CNN's ROI pooling, as ONNX Runtime and Caffe compute it): X [N, C, H, W],
// rois [R, 5] of (batch index, x1, y1, x2, y2) in input coordinates; Y [R, C, ph, pw], each
// cell the max of its bin. A roi's corners are scaled by spatial_scale and rounded (half away
// from zero); its size is at least one pixel; bin (i, j) of a ph x pw grid covers rows
// [floor(i·h/ph), ceil((i+1)·h/ph)) from the roi's top (and columns alike), clipped to the
// image; an empty bin is 0, and a NaN in a bin is that bin's value (ONNX Runtime skips NaNs).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/tensor_util.h"
#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

class MaxRoiPoolKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    if (!node.attrs.has("pooled_shape")) return invalid_model("attribute 'pooled_shape' is required");
    pooled_ = node.attrs.get_ints("pooled_shape");
    if (pooled_.size() != 2 || pooled_[0] <= 0 || pooled_[1] <= 0)
      return invalid_model("attribute 'pooled_shape' must be two positive sizes [height, width]");
    scale_ = node.attrs.get_float("spatial_scale", 1.f);
    if (!std::isfinite(scale_)) return invalid_model("attribute 'spatial_scale' must be finite");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs 2 inputs (X, rois)");
    for (int i : {0, 1})
      if (!dtype_is_float(ctx.input_dtype(i)))
        return invalid_argument("input " + std::to_string(i) + (i ? " (rois)" : " (X)") + " has dtype " +
                                dtype_name(ctx.input_dtype(i)) + "; expected a float type");
    if (ctx.input_dtype(1) != ctx.input_dtype(0))
      return invalid_argument("input 1 (rois) has dtype " + dtype_name(ctx.input_dtype(1)) + ", X has " + dtype_name(ctx.input_dtype(0)));
    const Shape& x = ctx.input_shape(0);
    const Shape& r = ctx.input_shape(1);
    if (x.size() != 4) return invalid_argument("input 0 (X) has shape " + shape_str(x) + "; expected [N, C, H, W]");
    if (r.size() != 2 || r[1] != 5)
      return invalid_argument("input 1 (rois) has shape " + shape_str(r) + "; expected [num_rois, 5]");
    const Shape out{r[0], x[1], pooled_[0], pooled_[1]};
    INGOT_RETURN_IF_ERROR(tensor_ops::check_output_size(out, 8));  // pooled_shape is the model's word
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    Tensor& y = ctx.output(0);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), ph = pooled_[0], pw = pooled_[1];
    const int64_t count = rois.dim(0);
    // Each roi's scaled, rounded corners; the batch index checked first (one error, no partial output).
    struct Box {
      int64_t batch, x0, y0, x1, y1;
    };
    std::vector<Box> boxes(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const double b = rois.scalar_as_double(i * 5);
      if (!(b >= 0 && b < double(n)) || b != std::floor(b))
        return invalid_argument("input 1 (rois) row " + std::to_string(i) + " has batch index " + std::to_string(b) +
                                "; X has a batch of " + std::to_string(n));
      auto corner = [&](int k) { return int64_t(std::round(rois.scalar_as_double(i * 5 + k) * double(scale_))); };
      boxes[size_t(i)] = {int64_t(b), corner(1), corner(2), corner(3), corner(4)};
    }
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(count * c, h * w, [&](int64_t b, int64_t e) {
        for (int64_t rc = b; rc < e; ++rc) {
          const Box& box = boxes[size_t(rc / c)];
          const T* plane = px + (box.batch * c + rc % c) * h * w;
          const double bin_h = double(std::max<int64_t>(box.y1 - box.y0 + 1, 1)) / double(ph);
          const double bin_w = double(std::max<int64_t>(box.x1 - box.x0 + 1, 1)) / double(pw);
          T* out = py + rc * ph * pw;
          for (int64_t i = 0; i < ph; ++i) {
            const int64_t r0 = std::clamp<int64_t>(int64_t(std::floor(double(i) * bin_h)) + box.y0, 0, h);
            const int64_t r1 = std::clamp<int64_t>(int64_t(std::ceil(double(i + 1) * bin_h)) + box.y0, 0, h);
            for (int64_t j = 0; j < pw; ++j) {
              const int64_t c0 = std::clamp<int64_t>(int64_t(std::floor(double(j) * bin_w)) + box.x0, 0, w);
              const int64_t c1 = std::clamp<int64_t>(int64_t(std::ceil(double(j + 1) * bin_w)) + box.x0, 0, w);
              if (r1 <= r0 || c1 <= c0) {
                out[i * pw + j] = T(0.f);
                continue;
              }
              A best = A(plane[r0 * w + c0]);
              for (int64_t r = r0; r < r1; ++r)
                for (int64_t q = c0; q < c1; ++q) {
                  const A v = A(plane[r * w + q]);
                  if (v > best || std::isnan(v)) best = v;  // a NaN in the bin is the bin's value
                }
              out[i * pw + j] = T(best);
            }
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  std::vector<int64_t> pooled_;
  float scale_ = 1.f;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", MaxRoiPool, MaxRoiPoolKernel);

}  // namespace ingot
