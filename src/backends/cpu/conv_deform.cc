// DeformConv (opset 19; torchvision's deform_conv2d), 2-D: X [N, C, H, W], W [oC, C/group, kH,
// kW], offset [N, offset_group·kH·kW·2, oH, oW], optional B [oC] and mask [N, offset_group·kH·kW,
// oH, oW]. Kernel tap (kh, kw) of output (i, j) reads input channel c at
//   h = i·stride_h - pad_top + kh·dilation_h + offset[n, ((g·kH + kh)·kW + kw)·2 + 0, i, j]
//   w = j·stride_w - pad_left + kw·dilation_w + offset[n, ((g·kH + kh)·kW + kw)·2 + 1, i, j]
// (g = c's offset group) by bilinear interpolation with zeros outside the image, times the mask.
// As a product: per batch row and group, the sampled columns [C/group·kH·kW, oH·oW] (im2col with
// the offsets) multiplied by the group's weights [oC/group, C/group·kH·kW]; float32 through
// oneDNN's sgemm, float16/bfloat16 computed in float32, float64 in double.
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
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

using tensor_ops::ints_str;

// Bilinear sample of an H x W plane at (h, w), zero outside (GridSample's zeros padding with
// align_corners, as the ONNX reference computes it).
template <class C>
C bilinear(const C* plane, int64_t H, int64_t W, C h, C w) {
  if (!(h > C(-1) && h < C(H) && w > C(-1) && w < C(W))) return C(0);
  const int64_t h0 = int64_t(std::floor(h)), w0 = int64_t(std::floor(w));
  const C lh = h - C(h0), lw = w - C(w0);
  auto at = [&](int64_t r, int64_t c) { return r >= 0 && r < H && c >= 0 && c < W ? plane[r * W + c] : C(0); };
  return (C(1) - lh) * ((C(1) - lw) * at(h0, w0) + lw * at(h0, w0 + 1)) + lh * ((C(1) - lw) * at(h0 + 1, w0) + lw * at(h0 + 1, w0 + 1));
}

// out [M, N] = a [M, K] · b [K, N] (row-major), added to what out holds.
void product_add(const float* a, const float* b, float* out, int64_t M, int64_t N, int64_t K) {
  dnnl_sgemm('N', 'N', M, N, K, 1.f, a, K, b, N, 1.f, out, N);
}
void product_add(const double* a, const double* b, double* out, int64_t M, int64_t N, int64_t K) {
  parallel_for(M, N * K, [&](int64_t rb, int64_t re) {
    for (int64_t m = rb; m < re; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const double s = a[m * K + k];
        for (int64_t n = 0; n < N; ++n) out[m * N + n] += s * b[k * N + n];
      }
  });
}

class DeformConvKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    dilations_ = node.attrs.get_ints("dilations");
    pads_ = node.attrs.get_ints("pads");
    strides_ = node.attrs.get_ints("strides");
    kernel_shape_ = node.attrs.get_ints("kernel_shape");
    group_ = node.attrs.get_int("group", 1);
    offset_group_ = node.attrs.get_int("offset_group", 1);
    if (group_ <= 0 || offset_group_ <= 0) return invalid_model("attributes 'group' and 'offset_group' must be positive");
    return Status::ok();
  }

  struct Geometry {
    int64_t n, c, h, w, oc, kh, kw, oh, ow;
    int64_t sh, sw, dh, dw, pt, pl;
  };
  Expected<Geometry> geometry(const Shape& x, const Shape& wt, const Shape& off, const Shape* bias, const Shape* mask) const {
    if (x.size() != 4)
      return unsupported("input 0 (X) has shape " + shape_str(x) + "; DeformConv runs on 2-D images [N, C, H, W] only");
    if (wt.size() != 4) return invalid_argument("input 1 (W) has shape " + shape_str(wt) + "; expected [oC, C/group, kH, kW]");
    Geometry g{x[0], x[1], x[2], x[3], wt[0], wt[2], wt[3], 0, 0, 1, 1, 1, 1, 0, 0};
    if (!kernel_shape_.empty() && kernel_shape_ != std::vector<int64_t>{g.kh, g.kw})
      return invalid_model("attribute 'kernel_shape' " + ints_str(kernel_shape_) + " differs from W's " + shape_str(wt));
    if (g.c != wt[1] * group_ || g.oc % group_ != 0)
      return invalid_argument("X has " + std::to_string(g.c) + " channels and W is " + shape_str(wt) + ": with group " +
                              std::to_string(group_) + " expected " + std::to_string(wt[1] * group_) + " channels and oC a multiple");
    if (g.c % offset_group_ != 0)
      return invalid_argument("X's " + std::to_string(g.c) + " channels are not divisible by offset_group " + std::to_string(offset_group_));
    auto pair = [](const std::vector<int64_t>& v, size_t n, const char* name, int64_t* a, int64_t* b) -> Status {
      if (v.empty()) return Status::ok();
      if (v.size() != n) return invalid_model("attribute '" + std::string(name) + "' " + ints_str(v) + " has " + std::to_string(v.size()) + " entries; expected " + std::to_string(n));
      *a = v[0], *b = v[1];
      return Status::ok();
    };
    int64_t pb = 0, pr = 0;
    INGOT_RETURN_IF_ERROR(pair(strides_, 2, "strides", &g.sh, &g.sw));
    INGOT_RETURN_IF_ERROR(pair(dilations_, 2, "dilations", &g.dh, &g.dw));
    INGOT_RETURN_IF_ERROR(pair(pads_, 4, "pads", &g.pt, &g.pl));
    if (pads_.size() == 4) pb = pads_[2], pr = pads_[3];
    if (g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0 || g.pt < 0 || g.pl < 0 || pb < 0 || pr < 0)
      return invalid_model("strides and dilations must be positive, pads non-negative");
    g.oh = (g.h + g.pt + pb - (g.dh * (g.kh - 1) + 1)) / g.sh + 1;
    g.ow = (g.w + g.pl + pr - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
    if (g.oh <= 0 || g.ow <= 0) return invalid_argument("the dilated kernel does not fit the padded image " + shape_str(x));
    const Shape want_off{g.n, offset_group_ * g.kh * g.kw * 2, g.oh, g.ow};
    if (off != want_off) return invalid_argument("input 2 (offset) has shape " + shape_str(off) + "; expected " + shape_str(want_off));
    if (bias && *bias != Shape{g.oc}) return invalid_argument("input 3 (B) has shape " + shape_str(*bias) + "; expected [" + std::to_string(g.oc) + "]");
    const Shape want_mask{g.n, offset_group_ * g.kh * g.kw, g.oh, g.ow};
    if (mask && *mask != want_mask) return invalid_argument("input 4 (mask) has shape " + shape_str(*mask) + "; expected " + shape_str(want_mask));
    return g;
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 3 || ctx.num_inputs() > 5 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      return invalid_model("needs 3 to 5 inputs (X, W, offset, B, mask)");
    const DType t = ctx.input_dtype(0);
    if (!dtype_is_float(t)) return invalid_argument("input 0 (X) has dtype " + dtype_name(t) + "; expected a float type");
    for (int i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) + ", X has " + dtype_name(t));
    const bool has_b = ctx.num_inputs() > 3 && ctx.has_input(3), has_m = ctx.num_inputs() > 4 && ctx.has_input(4);
    INGOT_ASSIGN_OR_RETURN(Geometry g, geometry(ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2),
                                                has_b ? &ctx.input_shape(3) : nullptr, has_m ? &ctx.input_shape(4) : nullptr));
    ctx.set_output(0, t, {g.n, g.oc, g.oh, g.ow});
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const bool has_b = ctx.num_inputs() > 3 && ctx.has_input(3), has_m = ctx.num_inputs() > 4 && ctx.has_input(4);
    INGOT_ASSIGN_OR_RETURN(Geometry g, geometry(ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape(),
                                                has_b ? &ctx.input(3).shape() : nullptr, has_m ? &ctx.input(4).shape() : nullptr));
    Tensor& y = ctx.output(0);
    if (y.numel() == 0) return Status::ok();
    if (ctx.input(0).dtype() == DType::kFloat64) run<double>(ctx, g, has_b, has_m);
    else run<float>(ctx, g, has_b, has_m);
    return Status::ok();
  }

 private:
  // Every input widened to C (a copy unless it already is C), the result rounded once into Y.
  template <class C>
  void run(ComputeContext& ctx, const Geometry& g, bool has_b, bool has_m) const {
    auto widened = [](const Tensor& t) {
      std::vector<C> v(static_cast<size_t>(t.numel()));
      dispatch_float(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = ew::convert<C>(p[i]);
      });
      return v;
    };
    const std::vector<C> x = widened(ctx.input(0)), wt = widened(ctx.input(1)), off = widened(ctx.input(2));
    const std::vector<C> bias = has_b ? widened(ctx.input(3)) : std::vector<C>(), mask = has_m ? widened(ctx.input(4)) : std::vector<C>();
    const int64_t cg = g.c / group_, ocg = g.oc / group_, taps = g.kh * g.kw, rows = cg * taps, cols = g.oh * g.ow;
    const int64_t c_per_offset = g.c / offset_group_;
    std::vector<C> out(static_cast<size_t>(g.n * g.oc * cols));
    std::vector<C> col(static_cast<size_t>(rows * cols));
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t gr = 0; gr < group_; ++gr) {
        // The sampled columns of this batch row and group: row (c, kh, kw), column (i, j).
        parallel_for(rows, cols * 4, [&](int64_t rb, int64_t re) {
          for (int64_t r = rb; r < re; ++r) {
            const int64_t c = gr * cg + r / taps, tap = r % taps, kh = tap / g.kw, kw = tap % g.kw, og = c / c_per_offset;
            const C* plane = x.data() + (n * g.c + c) * g.h * g.w;
            const C* oh_ = off.data() + ((n * offset_group_ + og) * taps + tap) * 2 * cols;
            const C* ow_ = oh_ + cols;
            const C* m = has_m ? mask.data() + ((n * offset_group_ + og) * taps + tap) * cols : nullptr;
            C* dst = col.data() + r * cols;
            for (int64_t i = 0; i < g.oh; ++i)
              for (int64_t j = 0; j < g.ow; ++j) {
                const int64_t p = i * g.ow + j;
                const C h = C(i * g.sh - g.pt + kh * g.dh) + oh_[p], w = C(j * g.sw - g.pl + kw * g.dw) + ow_[p];
                const C v = bilinear(plane, g.h, g.w, h, w);
                dst[p] = m ? v * m[p] : v;
              }
          }
        });
        C* o = out.data() + (n * g.oc + gr * ocg) * cols;
        for (int64_t k = 0; k < ocg; ++k)
          for (int64_t p = 0; p < cols; ++p) o[k * cols + p] = has_b ? bias[size_t(gr * ocg + k)] : C(0);
        product_add(wt.data() + gr * ocg * rows, col.data(), o, ocg, cols, rows);
      }
    Tensor& y = ctx.output(0);
    dispatch_float(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] = ew::convert<T>(out[size_t(i)]);
    });
  }

  std::vector<int64_t> dilations_, pads_, strides_, kernel_shape_;
  int64_t group_ = 1, offset_group_ = 1;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", DeformConv, DeformConvKernel);

}  // namespace ingot
