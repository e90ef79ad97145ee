// ingot.FeedForward on CUDA (the op's contract: backends/cpu/feed_forward.cc). At most 128 rows
// in float16/bfloat16 (a transformer's batch 1) are one kernel (feed_forward_block.cu), where the
// unfused graph's three launches and its two boundaries into cuBLASLt products were most of the
// block's time (docs/PERFORMANCE.md, developer session 21). Other shapes compose the kernels the
// unfused graph launched, into scratch: the first product with its bias and activation in
// cuBLASLt's epilogue (activated_product.h), the second with its bias and X as cuBLASLt's C, then
// the LayerNorm. Either way the step's last kernel requests the next steps' weights into L2, as
// the graph's LayerNorm did.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cuda/activated_product.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/feed_forward_impl.h"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/norm_impl.h"
#include "ir/feed_forward_attrs.h"

namespace ingot::cuda {
namespace {

size_t round_up_256(size_t n) { return (n + 255) / 256 * 256; }

class FeedForwardKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(spec_, parse_feed_forward(node));
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != kFfInputs) return "needs 7 inputs";
    const DType t = in[kFfX].dtype;
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16) return "dtype " + dtype_name(t);
    const Shape& x = in[kFfX].shape;
    const Shape& w1 = in[kFfW1].shape;
    // The second product adds its residual in cuBLASLt's epilogue (gemm.cc's condition), and
    // both products run on cuBLASLt's aligned kernels, as FusedMatMul ran them.
    const int64_t es = int64_t(dtype_size(t));
    if (x.empty() || w1.size() != 2 || x.back() <= kSkinnyMaxN || w1[1] <= kSkinnyMaxN || (x.back() * es) % 16 != 0 ||
        (w1[1] * es) % 16 != 0)
      return "a block whose widths are at most " + std::to_string(kSkinnyMaxN) + " or rows not 16-byte multiples";
    return {};
  }

  // The cuBLASLt workspace, then G [rows, N] and Z [rows, K] (the composed path), or the one
  // kernel's G and partial sums, whichever is larger.
  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    if (in.size() != kFfInputs || in[kFfX].shape.empty() || in[kFfW1].shape.size() != 2) return 0;
    const Sizes s = sizes_of(in[kFfX].shape, in[kFfW1].shape);
    return kGemmWorkspaceBytes + std::max(composed_bytes(s, dtype_size(in[kFfX].dtype)),
                                          feed_forward_block_scratch_bytes(s.rows, s.K, s.N));
  }

  // The LayerNorm at the end requests the next steps' weights; the predecessors' requests stop at
  // the first product's (the second's are read after it, as in the unfused graph).
  bool prefetches_l2() const override { return true; }
  std::vector<int> late_inputs() const override { return {kFfW2, kFfB2, kFfGamma, kFfBeta}; }
  bool prefetches_after_inputs() const override { return true; }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& X = ctx.input(kFfX);
    const Sizes s = sizes_of(X.shape(), ctx.input(kFfW1).shape());
    if (s.rows == 0) return Status::ok();
    const DType dt = X.dtype();
    const size_t es = dtype_size(dt);
    if (ctx.workspace_bytes() < kGemmWorkspaceBytes + composed_bytes(s, es))
      return internal_error("FeedForward: workspace smaller than planned");
    void* scratch = static_cast<std::byte*>(ctx.workspace()) + kGemmWorkspaceBytes;
    if (feed_forward_block_fits(dt, s.rows, s.K, s.N, ctx.handles().sm_count) && ctx.handles().grid_counter &&
        ctx.workspace_bytes() >= kGemmWorkspaceBytes + feed_forward_block_scratch_bytes(s.rows, s.K, s.N) &&
        aligned(X.raw()) && aligned(ctx.input(kFfW1).raw()) && aligned(ctx.input(kFfW2).raw())) {
      FeedForwardLaunch a;
      a.dtype = dt;
      a.x = X.raw(), a.w1 = ctx.input(kFfW1).raw(), a.b1 = optional(ctx, kFfB1);
      a.w2 = ctx.input(kFfW2).raw(), a.b2 = optional(ctx, kFfB2);
      a.gamma = ctx.input(kFfGamma).raw(), a.beta = optional(ctx, kFfBeta);
      a.y = ctx.output(0).raw();
      a.rows = s.rows, a.K = s.K, a.N = s.N;
      a.epsilon = spec_.epsilon;
      a.has_act = spec_.act != HeadActivation::kNone;
      // GELU in the tanh form cuBLASLt's epilogue gives the composed path for half types.
      a.act = spec_.act == HeadActivation::kRelu ? PointwiseActivation::kRelu : PointwiseActivation::kGeluTanh;
      a.scratch = scratch;
      a.counter = ctx.handles().grid_counter;
      a.sm_count = ctx.handles().sm_count;
      a.prefetch = ctx.l2_prefetch();
      return cuda_status(launch_feed_forward_block(a, ctx.stream()), "FeedForward: one-kernel path");
    }
    std::byte* g = static_cast<std::byte*>(scratch);
    std::byte* z = g + round_up_256(size_t(s.rows * s.N) * es);
    INGOT_RETURN_IF_ERROR(activated_product(ctx.handles(), ctx.workspace(), dt, X.raw(), ctx.input(kFfW1).raw(),
                                            optional(ctx, kFfB1), s.rows, s.N, s.K, spec_.act, g, "FeedForward"));
    GemmDesc d;
    d.m = s.rows, d.n = s.K, d.k = s.N;
    d.dtype = dt;
    d.bias = optional(ctx, kFfB2);
    d.beta = 1.f, d.c_in = X.raw();
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, g, ctx.input(kFfW2).raw(), z, ctx.workspace(), kGemmWorkspaceBytes));
    RowNormLaunch n;
    n.dtype = n.param_dtype = dt;
    n.x = z;
    n.gamma = ctx.input(kFfGamma).raw();
    n.beta = optional(ctx, kFfBeta);
    n.y = ctx.output(0).raw();
    n.rows = n.x_period = s.rows;
    n.d = s.K;
    n.epsilon = spec_.epsilon;
    n.sm_count = ctx.handles().sm_count;
    n.prefetch = ctx.l2_prefetch();
    return cuda_status(launch_row_norm(n, ctx.stream()), "FeedForward: LayerNorm");
  }

 private:
  struct Sizes {
    int64_t rows = 0, K = 0, N = 0;
  };
  static Sizes sizes_of(const Shape& x, const Shape& w1) {
    Sizes s;
    s.K = x.back();
    s.N = w1[1];
    s.rows = s.K > 0 ? shape_numel(x) / s.K : 0;
    return s;
  }
  static const void* optional(const CudaComputeContext& ctx, int i) { return ctx.has_input(i) ? ctx.input(i).raw() : nullptr; }
  static bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
  static size_t composed_bytes(const Sizes& s, size_t es) {
    return round_up_256(size_t(s.rows * s.N) * es) + round_up_256(size_t(s.rows * s.K) * es);
  }

  FeedForwardSpec spec_;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", FeedForward, FeedForwardKernel);

}  // namespace ingot::cuda
