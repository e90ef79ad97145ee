// AffineGrid (opset 20; torch.nn.functional.affine_grid): the sampling grid of a batch of affine
// maps, for GridSample. theta [N, 2, 3] and size [N, C, H, W] give grid [N, H, W, 2]; theta
// [N, 3, 4] and size [N, C, D, H, W] give grid [N, D, H, W, 3]. Each point is theta[n] applied to
// (x, y[, z], 1), where an axis of n points has coordinates
//   align_corners = 0:  (2i + 1) / n - 1        (pixel centres of [-1, 1] cut in n)
//   align_corners = 1:  2i / (n - 1) - 1        (0 for n = 1, as PyTorch)
// x running over W, y over H, z over D. Computed in double, rounded once to theta's dtype.
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise_util.h"
#include "backends/cpu/tensor_util.h"
#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

double grid_coordinate(int64_t i, int64_t n, bool align_corners) {
  if (align_corners) return n > 1 ? 2.0 * double(i) / double(n - 1) - 1.0 : 0.0;
  return (2.0 * double(i) + 1.0) / double(n) - 1.0;
}

class AffineGridKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    const int64_t a = node.attrs.get_int("align_corners", 0);
    if (a != 0 && a != 1) return invalid_model("attribute 'align_corners' is " + std::to_string(a) + "; expected 0 or 1");
    align_corners_ = a == 1;
    return Status::ok();
  }

  // The output grid's shape [N, (D,) H, W, k] from theta's shape and size's values.
  static Expected<Shape> grid_shape(const Shape& theta, const Tensor& size) {
    if (theta.size() != 3 || !((theta[1] == 2 && theta[2] == 3) || (theta[1] == 3 && theta[2] == 4)))
      return invalid_argument("input 0 (theta) has shape " + shape_str(theta) + "; expected [N, 2, 3] or [N, 3, 4]");
    const int64_t k = theta[1];
    if (size.rank() != 1 || size.numel() != k + 2 || (size.dtype() != DType::kInt64 && size.dtype() != DType::kInt32))
      return invalid_argument("input 1 (size) must be " + std::to_string(k + 2) + " int64 values ([N, C, " +
                              (k == 2 ? "H, W" : "D, H, W") + "]) for theta " + shape_str(theta) + ", got " +
                              dtype_name(size.dtype()) + " " + shape_str(size.shape()));
    const std::vector<int64_t> v = size.to_int_vector();
    if (v[0] != theta[0])
      return invalid_argument("input 1 (size) has batch " + std::to_string(v[0]) + ", theta has " + std::to_string(theta[0]));
    Shape out{v[0]};
    for (size_t i = 2; i < v.size(); ++i) {
      if (v[i] < 0) return invalid_argument("input 1 (size) has a negative spatial size " + std::to_string(v[i]));
      out.push_back(v[i]);
    }
    out.push_back(k);
    INGOT_RETURN_IF_ERROR(tensor_ops::check_output_size(out, 8));  // size comes from values
    return out;
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs 2 inputs (theta, size)");
    if (!dtype_is_float(ctx.input_dtype(0)))
      return invalid_argument("input 0 (theta) has dtype " + dtype_name(ctx.input_dtype(0)) + "; expected a float type");
    if (!ctx.input_value(1)) {
      ctx.set_output_dynamic(0, ctx.input_dtype(0));
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Shape out, grid_shape(ctx.input_shape(0), *ctx.input_value(1)));
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& theta = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(Shape out, grid_shape(theta.shape(), ctx.input(1)));
    Tensor& grid = ctx.allocate_output(0, theta.dtype(), out);
    if (grid.numel() == 0) return Status::ok();
    const int64_t k = theta.dim(1), n = out[0];
    // Spatial sizes in (x, y[, z]) order: W, H[, D].
    std::vector<int64_t> extent;
    for (size_t i = out.size() - 2; i >= 1; --i) extent.push_back(out[i]);
    int64_t points = 1;
    for (int64_t e : extent) points *= e;
    dispatch_float(theta.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* th = theta.data<T>();
      T* g = grid.data<T>();
      parallel_for(n * points, 16, [&](int64_t b, int64_t e) {
        double c[4];
        for (int64_t at = b; at < e; ++at) {
          const int64_t batch = at / points;
          for (int64_t rest = at % points, d = 0; d < k; ++d) {
            c[d] = grid_coordinate(rest % extent[size_t(d)], extent[size_t(d)], align_corners_);
            rest /= extent[size_t(d)];
          }
          c[k] = 1.0;
          const T* m = th + batch * k * (k + 1);
          for (int64_t r = 0; r < k; ++r) {
            double v = 0;
            for (int64_t j = 0; j <= k; ++j) v += ew::convert<double>(m[r * (k + 1) + j]) * c[j];
            g[at * k + r] = ew::convert<T>(v);
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  bool align_corners_ = false;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", AffineGrid, AffineGridKernel);

}  // namespace ingot
