// ingot.ClassifierHead on CUDA (the op's contract: backends/cpu/classifier_head.cc). A batch of
// at most kHeadMaxRows rows, the case the op exists for (a classifier's first token at small
// batches), is one kernel: classifier_head.cu for the head alone, where it replaces the three or
// four launches of LayerNorm, product, activation and logits, each of which costs about its
// launch inside a CUDA graph; classifier_tail.cu with the feed-forward block before it, three
// launches more. More rows compose the general kernels into scratch, the launches the unfused
// graph made: for the block LayerNorm and two cuBLASLt products (bias and activation, then bias
// and residual, in their epilogues); for the head LayerNorm, a cuBLASLt product with the bias
// (and ReLU, or for half types the tanh-form GELU, as FusedMatMul computes them) in its
// epilogue, an in-place activation for the rest, and the narrow-product kernel for the logits.
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
    if (in.size() != kFfnGamma && in.size() != kHeadInputs) return "needs 7 or 13 inputs";
    const DType t = in[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return "dtype " + dtype_name(t);
    if (in[kHeadW2].shape.size() != 2 || in[kHeadW2].shape[1] > kSkinnyMaxN)
      return "more than " + std::to_string(kSkinnyMaxN) + " logits";
    if (in.size() == kHeadInputs) {
      const Shape& x = in[0].shape;
      // The block's second product adds its residual in cuBLASLt's epilogue (gemm.cc's condition).
      if (x.empty() || x.back() <= kSkinnyMaxN || (x.back() * int64_t(dtype_size(t))) % 16 != 0)
        return "a feed-forward block whose rows are at most " + std::to_string(kSkinnyMaxN) +
               " wide or not 16-byte multiples";
    }
    return {};
  }

  // Scratch of the composed path: after the cuBLASLt workspace, the head's normalized rows and H
  // and, with the feed-forward block, its Hf, G and output (each 256-byte aligned). The one-kernel
  // paths' scratch (shares of the logits; the tail's G and X too) fits in the first part.
  // Reserved even when one kernel fits, for weights that are not 16-byte aligned; the context's
  // workspace is shared by all kernels and products need the cuBLASLt part anyway.
  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != kFfnGamma && in.size() != kHeadInputs) return 0;  // supports() has said why not
    const Sizes s = sizes_of(in);
    const size_t es = dtype_size(in[0].dtype);
    size_t bytes = kGemmWorkspaceBytes + round_up_256(size_t(s.rows * s.K) * es) + round_up_256(size_t(s.rows * s.N1) * es);
    if (s.NF > 0) bytes += 2 * round_up_256(size_t(s.rows * s.K) * es) + round_up_256(size_t(s.rows * s.NF) * es);
    return bytes;
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& X = ctx.input(kHeadX);
    const Sizes s = sizes_of(ctx);
    if (s.rows == 0 || s.N2 == 0) return Status::ok();
    const DType dt = X.dtype();
    const int sms = ctx.handles().sm_count;
    HeadLaunch a = head_launch(ctx, s);
    if (spec_.ffn) {
      if (classifier_tail_fits(dt, s.rows, s.K, s.NF, s.N1, s.N2, sms) && ctx.handles().grid_counter &&
          classifier_tail_scratch_bytes(dt, s.K, s.NF, sms) <= kGemmWorkspaceBytes &&
          aligned(ctx.input(kHeadW1).raw()) && aligned(ctx.input(kFfnW1).raw()) && aligned(ctx.input(kFfnW2).raw())) {
        TailLaunch t;
        t.head = a;
        t.ffn_gamma = ctx.input(kFfnGamma).raw();
        t.ffn_beta = optional(ctx, kFfnBeta);
        t.f1 = ctx.input(kFfnW1).raw(), t.fb1 = optional(ctx, kFfnB1);
        t.f2 = ctx.input(kFfnW2).raw(), t.fb2 = optional(ctx, kFfnB2);
        t.NF = s.NF;
        t.ffn_epsilon = spec_.ffn_epsilon;
        t.ffn_has_act = spec_.ffn_act != HeadActivation::kNone;
        t.ffn_act = ffn_pointwise(dt);
        t.scratch = ctx.workspace();
        return cuda_status(launch_classifier_tail(t, ctx.stream()), "ClassifierHead: one-kernel path with the feed-forward block");
      }
      INGOT_ASSIGN_OR_RETURN(a.x, feed_forward(ctx, s));
    }
    if (classifier_head_fits(dt, s.rows, s.K, s.N1, s.N2, sms) && ctx.handles().grid_counter &&
        classifier_head_shares_bytes(s.N1, sms) <= kGemmWorkspaceBytes && aligned(ctx.input(kHeadW1).raw())) {
      a.shares = static_cast<float*>(ctx.workspace());
      a.counter = ctx.handles().grid_counter;
      return cuda_status(launch_classifier_head(a, ctx.stream()), "ClassifierHead: one-kernel path");
    }
    return composed(ctx, s, a.x);
  }

 private:
  struct Sizes {
    int64_t rows = 0, K = 0, N1 = 0, N2 = 0, NF = 0;  // NF: the feed-forward block's width, 0 without one
  };
  static Sizes sizes_of(const Shape& x, const Shape& w1, const Shape& w2, const Shape* f1) {
    Sizes s;
    s.K = x.empty() ? 0 : x.back();
    s.N1 = w1.size() == 2 ? w1[1] : 0;
    s.N2 = w2.size() == 2 ? w2[1] : 0;
    s.NF = f1 && f1->size() == 2 ? (*f1)[1] : 0;
    s.rows = s.K > 0 ? shape_numel(x) / s.K : 0;
    return s;
  }
  static Sizes sizes_of(const std::vector<InputMeta>& in) {
    return sizes_of(in[kHeadX].shape, in[kHeadW1].shape, in[kHeadW2].shape,
                    in.size() == kHeadInputs ? &in[kFfnW1].shape : nullptr);
  }
  Sizes sizes_of(const CudaComputeContext& ctx) const {
    return sizes_of(ctx.input(kHeadX).shape(), ctx.input(kHeadW1).shape(), ctx.input(kHeadW2).shape(),
                    spec_.ffn ? &ctx.input(kFfnW1).shape() : nullptr);
  }

  static bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
  static const void* optional(const CudaComputeContext& ctx, int i) { return ctx.has_input(i) ? ctx.input(i).raw() : nullptr; }

  static PointwiseActivation pointwise(HeadActivation a) {
    switch (a) {
      case HeadActivation::kTanh: return PointwiseActivation::kTanh;
      case HeadActivation::kGeluErf: return PointwiseActivation::kGeluErf;
      case HeadActivation::kGeluTanh: return PointwiseActivation::kGeluTanh;
      default: return PointwiseActivation::kRelu;
    }
  }
  // The block's activation as the composed path computes it: for half types GELU in its tanh
  // form, cuBLASLt's epilogue (gemm.cc says why).
  PointwiseActivation ffn_pointwise(DType dt) const {
    if (dt != DType::kFloat32 && spec_.ffn_act == HeadActivation::kGeluErf) return PointwiseActivation::kGeluTanh;
    return pointwise(spec_.ffn_act);
  }

  HeadLaunch head_launch(CudaComputeContext& ctx, const Sizes& s) const {
    HeadLaunch a;
    a.dtype = ctx.input(kHeadX).dtype();
    a.x = ctx.input(kHeadX).raw(), a.gamma = ctx.input(kHeadGamma).raw(), a.beta = optional(ctx, kHeadBeta);
    a.w1 = ctx.input(kHeadW1).raw(), a.b1 = optional(ctx, kHeadB1);
    a.w2 = ctx.input(kHeadW2).raw(), a.b2 = optional(ctx, kHeadB2);
    a.y = ctx.output(0).raw();
    a.float_output = spec_.float_output;
    a.rows = s.rows, a.K = s.K, a.N1 = s.N1, a.N2 = s.N2;
    a.epsilon = spec_.epsilon;
    a.has_act = spec_.act != HeadActivation::kNone;
    a.act = pointwise(spec_.act);
    a.sm_count = ctx.handles().sm_count;
    a.counter = ctx.handles().grid_counter;
    return a;
  }

  // The scratch after the cuBLASLt workspace: the head's Xn and H, then the block's Hf, G, X.
  struct Scratch {
    void *xn, *h, *hf, *g, *x;
  };
  static Expected<Scratch> scratch(CudaComputeContext& ctx, const Sizes& s, size_t es) {
    const size_t row_k = round_up_256(size_t(s.rows * s.K) * es);
    const size_t need = kGemmWorkspaceBytes + row_k + round_up_256(size_t(s.rows * s.N1) * es) +
                        (s.NF > 0 ? 2 * row_k + round_up_256(size_t(s.rows * s.NF) * es) : 0);
    if (ctx.workspace_bytes() < need) return internal_error("ClassifierHead: workspace smaller than planned");
    std::byte* p = static_cast<std::byte*>(ctx.workspace()) + kGemmWorkspaceBytes;
    Scratch sc;
    sc.xn = p;
    sc.h = p + row_k;
    sc.hf = p + row_k + round_up_256(size_t(s.rows * s.N1) * es);
    sc.g = static_cast<std::byte*>(sc.hf) + row_k;
    sc.x = static_cast<std::byte*>(sc.g) + round_up_256(size_t(s.rows * s.NF) * es);
    return sc;
  }

  // The feed-forward block on the general kernels, as the unfused graph ran it: LayerNorm into
  // Hf, the first product with its bias and activation into G, the second with its bias and Hf
  // as cuBLASLt's C into X. Returns X.
  Expected<const void*> feed_forward(CudaComputeContext& ctx, const Sizes& s) const {
    const DType dt = ctx.input(kHeadX).dtype();
    INGOT_ASSIGN_OR_RETURN(Scratch sc, scratch(ctx, s, dtype_size(dt)));
    INGOT_CUDA_RETURN_IF_ERROR(
        layer_norm(ctx, ctx.input(kHeadX).raw(), kFfnGamma, kFfnBeta, spec_.ffn_epsilon, sc.hf, s));
    GemmDesc d;
    d.m = s.rows, d.n = s.NF, d.k = s.K;
    d.dtype = dt;
    d.bias = optional(ctx, kFfnB1);
    bool after = false;
    if (spec_.ffn_act == HeadActivation::kRelu) d.activation = GemmActivation::kRelu;
    else if (spec_.ffn_act != HeadActivation::kNone && dt != DType::kFloat32) d.activation = GemmActivation::kGeluTanh;
    else after = spec_.ffn_act != HeadActivation::kNone;  // float32 GELU: exact, after the product (gemm.cc)
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, sc.hf, ctx.input(kFfnW1).raw(), sc.g, ctx.workspace(), kGemmWorkspaceBytes));
    if (after)
      INGOT_CUDA_RETURN_IF_ERROR(
          launch_activation_inplace(sc.g, s.rows * s.NF, pointwise(spec_.ffn_act), dt, ctx.stream()));
    GemmDesc o;
    o.m = s.rows, o.n = s.K, o.k = s.NF;
    o.dtype = dt;
    o.bias = optional(ctx, kFfnB2);
    o.beta = 1.f, o.c_in = sc.hf;
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), o, sc.g, ctx.input(kFfnW2).raw(), sc.x, ctx.workspace(), kGemmWorkspaceBytes));
    return static_cast<const void*>(sc.x);
  }

  cudaError_t layer_norm(CudaComputeContext& ctx, const void* x, int gamma, int beta, float epsilon, void* y,
                         const Sizes& s) const {
    RowNormLaunch n;
    n.dtype = n.param_dtype = ctx.input(kHeadX).dtype();
    n.x = x;
    n.gamma = ctx.input(gamma).raw();
    n.beta = optional(ctx, beta);
    n.y = y;
    n.rows = n.x_period = s.rows;
    n.d = s.K;
    n.epsilon = epsilon;
    n.sm_count = ctx.handles().sm_count;
    return launch_row_norm(n, ctx.stream());
  }

  // The head on the general kernels: LayerNorm, a cuBLASLt product with the bias (and ReLU, or
  // for half types the tanh-form GELU, as FusedMatMul computes them) in its epilogue, an
  // in-place activation for the rest, and the narrow-product kernel for the logits.
  Status composed(CudaComputeContext& ctx, const Sizes& s, const void* x) const {
    const DType dt = ctx.input(kHeadX).dtype();
    INGOT_ASSIGN_OR_RETURN(Scratch sc, scratch(ctx, s, dtype_size(dt)));
    INGOT_CUDA_RETURN_IF_ERROR(layer_norm(ctx, x, kHeadGamma, kHeadBeta, spec_.epsilon, sc.xn, s));
    GemmDesc d;
    d.m = s.rows, d.n = s.N1, d.k = s.K;
    d.dtype = dt;
    d.bias = optional(ctx, kHeadB1);
    bool after = spec_.act != HeadActivation::kNone;
    if (spec_.act == HeadActivation::kRelu) {
      d.activation = GemmActivation::kRelu, after = false;
    } else if (dt != DType::kFloat32 && (spec_.act == HeadActivation::kGeluErf || spec_.act == HeadActivation::kGeluTanh)) {
      d.activation = GemmActivation::kGeluTanh, after = false;  // as FusedMatMul (gemm.cc says why)
    }
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, sc.xn, ctx.input(kHeadW1).raw(), sc.h, ctx.workspace(), kGemmWorkspaceBytes));
    if (after)
      INGOT_CUDA_RETURN_IF_ERROR(launch_activation_inplace(sc.h, s.rows * s.N1, pointwise(spec_.act), dt, ctx.stream()));
    return cuda_status(launch_skinny_product(sc.h, ctx.input(kHeadW2).raw(), optional(ctx, kHeadB2), ctx.output(0).raw(),
                                             s.rows, s.N1, s.N2, dt, spec_.float_output, false,
                                             PointwiseActivation::kRelu, ctx.stream()),
                       "ClassifierHead: logits");
  }

  ClassifierHeadSpec spec_;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", ClassifierHead, ClassifierHeadKernel);

}  // namespace ingot::cuda
