// ingot.FeedForward (made by the fuse_feed_forward pass, CUDA engines): a post-LN transformer
// layer's feed-forward block as one op, from the block's input to the next layer's input:
//
//   G = act(X · W1 + b1)               rounded to X's dtype
//   Z = G · W2 + b2 + X                rounded to X's dtype (the block's residual)
//   Y = LayerNorm(Z, gamma, beta)      over the last axis (epsilon, float32 statistics), rounded
//
// inputs X [..., K], W1 [K, N], b1 [N] (optional), W2 [N, K], b2 [K] (optional), gamma [K],
// beta [K] (optional); attributes activation ("" | "Relu" | "Gelu" | "GeluTanh"), epsilon. Every
// input shares X's dtype (float32, float16 or bfloat16). The rounding points are the unfused
// graph's (each op stores its output), so this kernel is the reference the CUDA kernel is tested
// against; CPU engines never make the op (their products and SkipLayerNorm are already one pass
// over memory each, with no launches to save).
#include <string>
#include <vector>

#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/row_reference.h"
#include "ir/dispatch.h"
#include "ir/feed_forward_attrs.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::check_float;
using namespace row_reference;

class FeedForwardKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }

  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_feed_forward(node));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "W1", "b1", "W2", "b2", "gamma", "beta"};
    INGOT_RETURN_IF_ERROR(check_float(ctx, kFfX, "X"));
    const DType t = ctx.input_dtype(kFfX);
    for (int i = 1; i < kFfInputs; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has dtype " +
                                dtype_name(ctx.input_dtype(i)) + ", X has " + dtype_name(t));
    const Shape& x = ctx.input_shape(kFfX);
    if (x.empty()) return invalid_argument("input 0 (X) must have rank >= 1, got a scalar");
    const int64_t K = x.back();
    const Shape& w1 = ctx.input_shape(kFfW1);
    if (w1.size() != 2 || w1[0] != K)
      return invalid_argument("input 1 (W1) has shape " + shape_str(w1) + ", expected [" + std::to_string(K) +
                              ", N] (K = X's last dim)");
    const int64_t N = w1[1];
    const Shape& w2 = ctx.input_shape(kFfW2);
    if (w2 != Shape{N, K})
      return invalid_argument("input 3 (W2) has shape " + shape_str(w2) + ", expected [" + std::to_string(N) + ", " +
                              std::to_string(K) + "] (W1's columns, X's last dim)");
    for (auto [i, len] : {std::pair<int, int64_t>{kFfB1, N}, {kFfB2, K}, {kFfGamma, K}, {kFfBeta, K}}) {
      if (!ctx.has_input(i)) continue;
      if (ctx.input_shape(i) != Shape{len})
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " +
                                shape_str(ctx.input_shape(i)) + ", expected [" + std::to_string(len) + "]");
    }
    ctx.set_output(0, t, x);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(kFfX);
    const int64_t K = x.shape().back();
    const int64_t rows = K ? x.numel() / K : 0;
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const Product<T> w1 = product_of<T>(ctx, kFfW1, kFfB1), w2 = product_of<T>(ctx, kFfW2, kFfB2);
      const Norm<T> norm = norm_of<T>(ctx, kFfGamma, kFfBeta, K, spec_.epsilon);
      const T* px = x.data<T>();
      T* py = ctx.output(0).data<T>();
      parallel_for(rows, 1, [&](int64_t b, int64_t e) {
        std::vector<float> xr(static_cast<size_t>(K));
        for (int64_t r = b; r < e; ++r) {
          for (int64_t k = 0; k < K; ++k) xr[size_t(k)] = float(px[r * K + k]);
          const std::vector<float> g = w1.apply(xr, spec_.act);
          const std::vector<float> y = norm.apply(w2.apply(g, HeadActivation::kNone, &xr));
          for (int64_t k = 0; k < K; ++k) py[r * K + k] = T(y[size_t(k)]);
        }
      });
    });
    return Status::ok();
  }

 private:
  FeedForwardSpec spec_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", FeedForward, FeedForwardKernel);

}  // namespace ingot
