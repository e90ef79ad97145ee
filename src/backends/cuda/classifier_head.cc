// ingot.ClassifierHead on CUDA (the op's contract: backends/cpu/classifier_head.cc). A batch of
// at most kHeadMaxRows rows, the case the op exists for (a classifier's first token at small
// batches), is one kernel: classifier_head.cu for the head alone, where it replaces the three or
// four launches of LayerNorm, product, activation and logits, each of which costs about its
// launch inside a CUDA graph; classifier_tail.cu with the feed-forward block before it, three
// launches more. More rows compose the general kernels into scratch, the launches the unfused
// graph made: for the block LayerNorm and two cuBLASLt products (bias and activation, then bias
// and residual, in their epilogues; the second with the head's LayerNorm through
// product_layer_norm, which at batch 32 splits it over K into partials that the LayerNorm sums,
// one launch fewer than cuBLASLt's split-K and its reduction); for the head LayerNorm (unless it
// came with the block), a cuBLASLt product with the bias
// (and ReLU, or for half types the tanh-form GELU, as FusedMatMul computes them) in its
// epilogue, and the narrow-product kernel for the logits, which applies any other activation as
// it loads H.
#include <algorithm>
#include <atomic>
#include <cstddef>

#include "backends/cuda/activated_product.h"
#include "backends/cuda/classifier_head_impl.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/norm_impl.h"
#include "backends/cuda/product_norm.h"
#include "ir/classifier_head_attrs.h"

namespace ingot::cuda {
namespace {

size_t round_up_256(size_t n) { return (n + 255) / 256 * 256; }

// Multiprocessors the planned scratch of the one-kernel paths covers (workspace_bytes sees no
// device; an H100 has 132). On a larger device those paths check their scratch and compose.
constexpr int kScratchSms = 256;

class ClassifierHeadKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_classifier_head(node));
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != kFfnGamma && in.size() != kProjW && in.size() != kHeadInputs) return "needs 7, 13 or 16 inputs";
    const DType t = in[0].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return "dtype " + dtype_name(t);
    if (in[kHeadW2].shape.size() != 2 || in[kHeadW2].shape[1] > kSkinnyMaxN)
      return "more than " + std::to_string(kSkinnyMaxN) + " logits";
    if (in.size() == kHeadInputs) {
      const Shape& x = in[0].shape;
      const Shape& wo = in[kProjW].shape;
      const Shape& r = in[kProjResidual].shape;
      if (x.empty() || wo.size() != 2 || wo[0] != x.back() || wo[1] != x.back() || r.size() != 3 || r[2] != x.back())
        return "an output projection that is not square or a residual that is not [rows, S, K]";
    }
    if (in.size() >= kProjW) {
      const Shape& x = in[0].shape;
      // The block's second product adds its residual in cuBLASLt's epilogue (gemm.cc's condition).
      if (x.empty() || x.back() <= kSkinnyMaxN || (x.back() * int64_t(dtype_size(t))) % 16 != 0)
        return "a feed-forward block whose rows are at most " + std::to_string(kSkinnyMaxN) +
               " wide or not 16-byte multiples";
    }
    return {};
  }

  // Scratch of the composed path: the head's normalized rows and H and, with the feed-forward
  // block, its Hf, G and output, the projection's output and the residual's rows copied dense
  // (each 256-byte aligned; Scratch below); at least what the one-kernel paths take
  // (classifier_head_shares_bytes, classifier_tail_scratch_bytes) on a device of up to
  // kScratchSms multiprocessors. Reserved even when one kernel fits, for weights that are not
  // 16-byte aligned; the context's workspace is shared by all kernels.
  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != kFfnGamma && in.size() != kProjW && in.size() != kHeadInputs) return 0;  // supports() said why
    const Sizes s = sizes_of(in);
    const DType dt = in[0].dtype;
    const size_t es = dtype_size(dt);
    size_t bytes = round_up_256(size_t(s.rows * s.K) * es) + round_up_256(size_t(s.rows * s.N1) * es);
    if (s.NF > 0)
      bytes += 4 * round_up_256(size_t(s.rows * s.K) * es) + round_up_256(size_t(s.rows * s.NF) * es) +
               product_norm_split_bytes(dt, s.rows, s.K, s.NF);
    size_t one_kernel = classifier_head_shares_bytes(s.N1, kScratchSms);
    if (s.NF > 0) one_kernel = std::max(one_kernel, classifier_tail_scratch_bytes(dt, s.K, kScratchSms));
    return std::max(bytes, one_kernel);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& X = ctx.input(kHeadX);
    const Sizes s = sizes_of(ctx);
    if (s.rows == 0 || s.N2 == 0) return Status::ok();
    const DType dt = X.dtype();
    const int sms = ctx.handles().sm_count;
    HeadLaunch a = head_launch(ctx, s);
    const bool one_kernel_head = head_in_one_kernel(ctx, s);
    if (spec_.ffn) {
      const Residual res = residual(ctx, s);
      if (classifier_tail_fits(dt, s.rows, s.K, s.NF, s.N1, s.N2, sms, spec_.projection) && ctx.handles().grid_counter &&
          classifier_tail_scratch_bytes(dt, s.K, sms) <= ctx.workspace_bytes() &&
          aligned(ctx.input(kHeadW1).raw()) && aligned(ctx.input(kFfnW1).raw()) && aligned(ctx.input(kFfnW2).raw()) &&
          (!spec_.projection || aligned(ctx.input(kProjW).raw()))) {
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
        if (spec_.projection) {
          t.wo = ctx.input(kProjW).raw(), t.bo = optional(ctx, kProjB);
          t.residual = res.rows, t.residual_pitch = res.pitch;
        }
        t.scratch = ctx.workspace();
        return cuda_status(launch_classifier_tail(t, ctx.stream()), "ClassifierHead: one-kernel path with the feed-forward block");
      }
      const void* x0 = X.raw();
      if (spec_.projection) {
        INGOT_ASSIGN_OR_RETURN(x0, project(ctx, s, res));
      }
      // Composed, the head's LayerNorm comes with the block's second product (product_norm.h).
      INGOT_ASSIGN_OR_RETURN(a.x, feed_forward(ctx, s, x0, !one_kernel_head));
      if (!one_kernel_head) return composed(ctx, s, a.x, true);
    }
    if (one_kernel_head) {
      a.shares = static_cast<float*>(ctx.workspace());
      a.counter = ctx.handles().grid_counter;
      return cuda_status(launch_classifier_head(a, ctx.stream()), "ClassifierHead: one-kernel path");
    }
    return composed(ctx, s, a.x, false);
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
                    in.size() >= size_t(kProjW) ? &in[kFfnW1].shape : nullptr);
  }
  Sizes sizes_of(const CudaComputeContext& ctx) const {
    return sizes_of(ctx.input(kHeadX).shape(), ctx.input(kHeadW1).shape(), ctx.input(kHeadW2).shape(),
                    spec_.ffn ? &ctx.input(kFfnW1).shape() : nullptr);
  }

  static bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

  // Whether the head (after any feed-forward block) is the one-kernel path's (classifier_head.cu).
  bool head_in_one_kernel(const CudaComputeContext& ctx, const Sizes& s) const {
    const int sms = ctx.handles().sm_count;
    return classifier_head_fits(ctx.input(kHeadX).dtype(), s.rows, s.K, s.N1, s.N2, sms) && ctx.handles().grid_counter &&
           classifier_head_shares_bytes(s.N1, sms) <= ctx.workspace_bytes() && aligned(ctx.input(kHeadW1).raw());
  }
  static const void* optional(const CudaComputeContext& ctx, int i) { return ctx.has_input(i) ? ctx.input(i).raw() : nullptr; }

  // The block's activation as the composed path computes it: for half types GELU in its tanh
  // form, cuBLASLt's epilogue (gemm.cc says why).
  PointwiseActivation ffn_pointwise(DType dt) const {
    if (dt != DType::kFloat32 && spec_.ffn_act == HeadActivation::kGeluErf) return PointwiseActivation::kGeluTanh;
    return pointwise_of(spec_.ffn_act);
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
    a.act = pointwise_of(spec_.act);
    a.sm_count = ctx.handles().sm_count;
    a.counter = ctx.handles().grid_counter;
    return a;
  }

  // The scratch: the head's Xn and H, then the block's Hf, G, X,
  // then the projection's output X0, the residual's rows copied dense and the block's second
  // product's partials when it is split over K (product_norm.h).
  struct Scratch {
    void *xn, *h, *hf, *g, *x, *x0, *rows, *partials;
    size_t partials_bytes;
  };
  static Expected<Scratch> scratch(CudaComputeContext& ctx, const Sizes& s, DType dt) {
    const size_t es = dtype_size(dt);
    const size_t row_k = round_up_256(size_t(s.rows * s.K) * es);
    const size_t split = s.NF > 0 ? product_norm_split_bytes(dt, s.rows, s.K, s.NF) : 0;
    const size_t need = row_k + round_up_256(size_t(s.rows * s.N1) * es) +
                        (s.NF > 0 ? 4 * row_k + round_up_256(size_t(s.rows * s.NF) * es) + split : 0);
    if (ctx.workspace_bytes() < need) return internal_error("ClassifierHead: workspace smaller than planned");
    std::byte* p = static_cast<std::byte*>(ctx.workspace());
    Scratch sc;
    sc.xn = p;
    sc.h = p + row_k;
    sc.hf = p + row_k + round_up_256(size_t(s.rows * s.N1) * es);
    sc.g = static_cast<std::byte*>(sc.hf) + row_k;
    sc.x = static_cast<std::byte*>(sc.g) + round_up_256(size_t(s.rows * s.NF) * es);
    sc.x0 = static_cast<std::byte*>(sc.x) + row_k;
    sc.rows = static_cast<std::byte*>(sc.x0) + row_k;
    sc.partials = static_cast<std::byte*>(sc.rows) + row_k;
    sc.partials_bytes = split;
    return sc;
  }

  // Row r's residual at rows + r · pitch (elements): R [rows, S, K] at residual_position.
  struct Residual {
    const void* rows = nullptr;
    int64_t pitch = 0, S = 0;
  };
  Residual residual(const CudaComputeContext& ctx, const Sizes& s) const {
    if (!spec_.projection) return {};
    const Tensor& R = ctx.input(kProjResidual);
    Residual r;
    r.S = R.dim(1);
    const int64_t pos = spec_.residual_position < 0 ? spec_.residual_position + r.S : spec_.residual_position;
    r.rows = static_cast<const std::byte*>(R.raw()) + size_t(pos * s.K) * dtype_size(R.dtype());
    r.pitch = r.S * s.K;
    return r;
  }

  // X0 = context · Wo + bo + the residual's rows, one cuBLASLt product with the rows as its C (a
  // pitch of S · K, as the attention kernel reads a classifier token's residual in place);
  // should cuBLASLt refuse that pitch, the rows are copied dense first, from then on.
  Expected<const void*> project(CudaComputeContext& ctx, const Sizes& s, const Residual& r) const {
    const DType dt = ctx.input(kHeadX).dtype();
    const size_t es = dtype_size(dt);
    INGOT_ASSIGN_OR_RETURN(Scratch sc, scratch(ctx, s, dt));
    GemmDesc d;
    d.m = s.rows, d.n = s.K, d.k = s.K;
    d.dtype = dt;
    d.bias = optional(ctx, kProjB);
    d.beta = 1.f, d.c_in = r.rows, d.ldc_in = r.pitch;
    if (!strided_residual_refused_.load(std::memory_order_relaxed)) {
      if (lt_gemm(ctx.handles(), d, ctx.input(kHeadX).raw(), ctx.input(kProjW).raw(), sc.x0))
        return static_cast<const void*>(sc.x0);
      strided_residual_refused_.store(true, std::memory_order_relaxed);
    }
    INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(sc.rows, size_t(s.K) * es, r.rows, size_t(r.pitch) * es,
                                                 size_t(s.K) * es, size_t(s.rows), cudaMemcpyDeviceToDevice,
                                                 ctx.stream()));
    d.c_in = sc.rows, d.ldc_in = 0;
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, ctx.input(kHeadX).raw(), ctx.input(kProjW).raw(), sc.x0));
    return static_cast<const void*>(sc.x0);
  }

  // y = act(x · W + bias) as FusedMatMul computes it (activated_product.h).
  Status activated_product(CudaComputeContext& ctx, const void* x, int w, int bias, int64_t m, int64_t n, int64_t k,
                           HeadActivation act, void* y) const {
    return cuda::activated_product(ctx.handles(), ctx.input(kHeadX).dtype(), x, ctx.input(w).raw(),
                                   optional(ctx, bias), m, n, k, act, y, "ClassifierHead");
  }

  // The feed-forward block on the general kernels, as the unfused graph ran it: LayerNorm into
  // Hf, the first product with its bias and activation into G, the second with its bias and Hf
  // as cuBLASLt's C into X. Returns X; with `head_norm`, the second product comes with the head's
  // LayerNorm (product_layer_norm: at 32 rows split over K, the LayerNorm summing the parts, where
  // cuBLASLt split it with a reduction kernel of its own) and the normalized X is returned.
  Expected<const void*> feed_forward(CudaComputeContext& ctx, const Sizes& s, const void* x0, bool head_norm) const {
    const DType dt = ctx.input(kHeadX).dtype();
    INGOT_ASSIGN_OR_RETURN(Scratch sc, scratch(ctx, s, dt));
    INGOT_CUDA_RETURN_IF_ERROR(layer_norm(ctx, x0, kFfnGamma, kFfnBeta, spec_.ffn_epsilon, sc.hf, s));
    INGOT_RETURN_IF_ERROR(activated_product(ctx, sc.hf, kFfnW1, kFfnB1, s.rows, s.NF, s.K, spec_.ffn_act, sc.g));
    GemmDesc o;
    o.m = s.rows, o.n = s.K, o.k = s.NF;
    o.dtype = dt;
    o.bias = optional(ctx, kFfnB2);
    o.beta = 1.f, o.c_in = sc.hf;
    if (head_norm) {
      LayerNormArgs n;
      n.gamma = ctx.input(kHeadGamma).raw(), n.beta = optional(ctx, kHeadBeta);
      n.epsilon = spec_.epsilon;
      n.scratch = sc.partials, n.scratch_bytes = sc.partials_bytes;
      INGOT_RETURN_IF_ERROR(product_layer_norm(ctx.handles(), o, sc.g, ctx.input(kFfnW2).raw(), sc.xn, n,
                                               "ClassifierHead: the block's second product + the head's LayerNorm"));
      return static_cast<const void*>(sc.xn);
    }
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), o, sc.g, ctx.input(kFfnW2).raw(), sc.x));
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

  // The head on the general kernels: LayerNorm, the activated product, and the narrow-product
  // kernel for the logits. An activation cuBLASLt's epilogue cannot apply (BERT's pooler tanh)
  // is applied by the narrow product as it loads H, with the same rounding as a pass of its own
  // over H would store, one launch fewer. `normalized`: x is the LayerNorm's output already.
  Status composed(CudaComputeContext& ctx, const Sizes& s, const void* x, bool normalized) const {
    const DType dt = ctx.input(kHeadX).dtype();
    INGOT_ASSIGN_OR_RETURN(Scratch sc, scratch(ctx, s, dt));
    if (!normalized) INGOT_CUDA_RETURN_IF_ERROR(layer_norm(ctx, x, kHeadGamma, kHeadBeta, spec_.epsilon, sc.xn, s));
    const bool on_load = spec_.act != HeadActivation::kNone && !activation_in_epilogue(dt, spec_.act);
    INGOT_RETURN_IF_ERROR(activated_product(ctx, sc.xn, kHeadW1, kHeadB1, s.rows, s.N1, s.K,
                                            on_load ? HeadActivation::kNone : spec_.act, sc.h));
    return cuda_status(launch_skinny_product(sc.h, ctx.input(kHeadW2).raw(), optional(ctx, kHeadB2), ctx.output(0).raw(),
                                             s.rows, s.N1, s.N2, dt, spec_.float_output, false,
                                             PointwiseActivation::kRelu, ctx.stream(), on_load, pointwise_of(spec_.act)),
                       "ClassifierHead: logits");
  }

  ClassifierHeadSpec spec_;
  mutable std::atomic<bool> strided_residual_refused_{false};
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", ClassifierHead, ClassifierHeadKernel);

}  // namespace ingot::cuda
