// ingot.ClassifierHead on CUDA (the op's contract: backends/cpu/classifier_head.cc). A batch of
// at most kHeadMaxRows rows, the case the op exists for (a classifier's first token at small
// batches), is one kernel (classifier_head.cu): at batch 1 it replaces the three or
// four launches of LayerNorm, product, activation and logits, each of which costs about its
// launch inside a CUDA graph. More rows compose the general kernels into scratch: LayerNorm,
// a cuBLASLt product with the bias (and ReLU, or for half types the tanh-form GELU, as
// FusedMatMul computes them) in its epilogue, an in-place activation for the rest, and the
// narrow-product kernel for the logits.
#include <cstddef>

#include "backends/cuda/classifier_head_impl.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/norm_impl.h"
#include "ir/classifier_head_attrs.h"

namespace ingot::cuda {
namespace {

size_t round_up_256(size_t n) { return (n + 255) / 256 * 256; }

class ClassifierHeadKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_classifier_head(node));
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != 7) return "needs 7 inputs";
    const DType t = in[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return "dtype " + dtype_name(t);
    if (in[5].shape.size() != 2 || in[5].shape[1] > kSkinnyMaxN)
      return "more than " + std::to_string(kSkinnyMaxN) + " logits";
    return {};
  }

  // Scratch of the composed path: the normalized rows and H (each 256-byte aligned), after the
  // cuBLASLt workspace; the one-kernel path's shares of the logits fit in its first part. Reserved
  // even when the one kernel fits, for a W1 that is not 16-byte aligned; the context's workspace
  // is shared by all kernels and products need the cuBLASLt part anyway.
  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != 7) return 0;  // supports() has said why not
    const Sizes s = sizes_of(in[0].shape, in[3].shape, in[5].shape);
    const size_t es = dtype_size(in[0].dtype);
    return kGemmWorkspaceBytes + round_up_256(size_t(s.rows * s.K) * es) + round_up_256(size_t(s.rows * s.N1) * es);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    Tensor& Y = ctx.output(0);
    const Sizes s = sizes_of(X.shape(), ctx.input(3).shape(), ctx.input(5).shape());
    if (s.rows == 0 || s.N2 == 0) return Status::ok();
    const DType dt = X.dtype();
    const void* beta = ctx.has_input(2) ? ctx.input(2).raw() : nullptr;
    const void* b1 = ctx.has_input(4) ? ctx.input(4).raw() : nullptr;
    const void* b2 = ctx.has_input(6) ? ctx.input(6).raw() : nullptr;
    const int sms = ctx.handles().sm_count;
    if (classifier_head_fits(dt, s.rows, s.K, s.N1, s.N2, sms) && ctx.handles().grid_counter &&
        classifier_head_shares_bytes(s.N1, sms) <= ctx.workspace_bytes() &&
        reinterpret_cast<uintptr_t>(ctx.input(3).raw()) % 16 == 0) {
      HeadLaunch a;
      a.dtype = dt;
      a.x = X.raw(), a.gamma = ctx.input(1).raw(), a.beta = beta;
      a.w1 = ctx.input(3).raw(), a.b1 = b1;
      a.w2 = ctx.input(5).raw(), a.b2 = b2;
      a.y = Y.raw();
      a.float_output = spec_.float_output;
      a.rows = s.rows, a.K = s.K, a.N1 = s.N1, a.N2 = s.N2;
      a.epsilon = spec_.epsilon;
      a.has_act = spec_.act != HeadActivation::kNone;
      a.act = pointwise(spec_.act);
      a.sm_count = sms;
      a.shares = static_cast<float*>(ctx.workspace());
      a.counter = ctx.handles().grid_counter;
      return cuda_status(launch_classifier_head(a, ctx.stream()), "ClassifierHead: one-kernel path");
    }
    return composed(ctx, s, beta, b1, b2);
  }

 private:
  struct Sizes {
    int64_t rows = 0, K = 0, N1 = 0, N2 = 0;
  };
  static Sizes sizes_of(const Shape& x, const Shape& w1, const Shape& w2) {
    Sizes s;
    s.K = x.empty() ? 0 : x.back();
    s.N1 = w1.size() == 2 ? w1[1] : 0;
    s.N2 = w2.size() == 2 ? w2[1] : 0;
    s.rows = s.K > 0 ? shape_numel(x) / s.K : 0;
    return s;
  }

  static PointwiseActivation pointwise(HeadActivation a) {
    switch (a) {
      case HeadActivation::kTanh: return PointwiseActivation::kTanh;
      case HeadActivation::kGeluErf: return PointwiseActivation::kGeluErf;
      case HeadActivation::kGeluTanh: return PointwiseActivation::kGeluTanh;
      default: return PointwiseActivation::kRelu;
    }
  }

  Status composed(CudaComputeContext& ctx, const Sizes& s, const void* beta, const void* b1, const void* b2) const {
    const DType dt = ctx.input(0).dtype();
    const size_t es = dtype_size(dt);
    const size_t xn_bytes = round_up_256(size_t(s.rows * s.K) * es);
    if (ctx.workspace_bytes() < kGemmWorkspaceBytes + xn_bytes + round_up_256(size_t(s.rows * s.N1) * es))
      return internal_error("ClassifierHead: workspace smaller than planned");
    std::byte* scratch = static_cast<std::byte*>(ctx.workspace()) + kGemmWorkspaceBytes;
    void* xn = scratch;
    void* h = scratch + xn_bytes;

    RowNormLaunch n;
    n.dtype = n.param_dtype = dt;
    n.x = ctx.input(0).raw();
    n.gamma = ctx.input(1).raw();
    n.beta = beta;
    n.y = xn;
    n.rows = n.x_period = s.rows;
    n.d = s.K;
    n.epsilon = spec_.epsilon;
    n.sm_count = ctx.handles().sm_count;
    INGOT_CUDA_RETURN_IF_ERROR(launch_row_norm(n, ctx.stream()));

    GemmDesc d;
    d.m = s.rows, d.n = s.N1, d.k = s.K;
    d.dtype = dt;
    d.bias = b1;
    bool after = spec_.act != HeadActivation::kNone;
    if (spec_.act == HeadActivation::kRelu) {
      d.activation = GemmActivation::kRelu, after = false;
    } else if (dt != DType::kFloat32 && (spec_.act == HeadActivation::kGeluErf || spec_.act == HeadActivation::kGeluTanh)) {
      d.activation = GemmActivation::kGeluTanh, after = false;  // as FusedMatMul (gemm.cc says why)
    }
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, xn, ctx.input(3).raw(), h, ctx.workspace(), kGemmWorkspaceBytes));
    if (after)
      INGOT_CUDA_RETURN_IF_ERROR(launch_activation_inplace(h, s.rows * s.N1, pointwise(spec_.act), dt, ctx.stream()));
    return cuda_status(launch_skinny_product(h, ctx.input(5).raw(), b2, ctx.output(0).raw(), s.rows, s.N1, s.N2, dt,
                                             spec_.float_output, false, PointwiseActivation::kRelu, ctx.stream()),
                       "ClassifierHead: logits");
  }

  ClassifierHeadSpec spec_;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", ClassifierHead, ClassifierHeadKernel);

}  // namespace ingot::cuda
