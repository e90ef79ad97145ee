// ingot.Attention on CUDA (the contract is at the top of backends/cpu/attention.cc):
//   1. qkv = X · W_qkv + b_qkv             one cuBLASLt GEMM with a bias epilogue, into the workspace
//                                          (a one-query attention over many rows: K|V for every row
//                                          and Q for the query rows alone, project_qkv)
//   2. context = softmax(scale · Q Kᵀ + mask) V per head, flash style (attention.cu), read from qkv
//      and written head-interleaved into [B*S, N] without transposes
//      (steps 1 and 2 are one kernel, attention_projected.cu, where S is 128 and heads are 64 wide:
//      no qkv is stored)
//   3. Y = context · W_out + b_out (+ R)   a second GEMM (without W_out the context is Y itself); a
//                                          residual R (input 6) is its C, added in the epilogue;
//                                          a LayerNorm of Y (inputs 7-8, norm_epsilon) goes into
//                                          that product's epilogue where ingot's fused kernel
//                                          takes the shape, else runs over Y (product_norm.h)
// With query_rows the context and Y have Sq = query_rows' count rows per batch instead of S: the
// core computes those queries alone (against every key) and the out-projection runs on B·Sq rows;
// with residual_rows "query" too, R is the whole sequence and its query rows are read in place.
// One query position over many rows takes steps 1 and 2 with the keys and values absorbed
// (absorbed_context: no K or V is computed for the S positions; attention_impl.h says how).
// Workspace: [qkv [B*S, 3N] | context [B*Sq, N] when W_out is given | the residual's query rows
// [B*Sq, M] with residual_rows "query", should cuBLASLt need them dense].
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/attention_impl.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/product_norm.h"
#include "ir/attention_attrs.h"

namespace ingot::cuda {
namespace {

constexpr int kX = 0, kWqkv = 1, kBqkv = 2, kMask = 3, kWout = 4, kBout = 5, kResidual = 6, kNormGamma = 7,
              kNormBeta = 8;
// Rows (B·S) from which a one-query attention projects Q for its query rows alone (project_qkv):
// below, the second launch costs about what the smaller product saves. Estimated from cuBLASLt's
// times at these shapes (sessions 5-7); at b32 s128 measured against one product over every row
// (H100, developer session 23, alternating, split / one product, ms): DistilBERT 0.7049 / 0.7126,
// 0.7088 / 0.7145, 0.7107 / 0.7237; BERT-base 1.4852 / 1.5037, 1.4855 / 1.4879, 1.4818 / 1.4926.
constexpr int64_t kSplitQueryRows = 2048;

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

bool is_device_float(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

class AttentionKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    auto a = parse_attention_attrs(node);
    if (!a) return a.status();
    attrs_ = *a;
    norm_ = node.inputs.size() > size_t(kNormGamma) && node.inputs[size_t(kNormGamma)] != kNoValue;
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    auto present = [&](int i) { return size_t(i) < in.size() && in[size_t(i)].present; };
    if (!present(kX) || !present(kWqkv)) return "needs inputs X and W_qkv";
    DType t = in[kX].dtype;
    if (!is_device_float(t)) return "dtype " + dtype_name(t);
    for (int i : {kWqkv, kBqkv, kWout, kBout, kResidual, kNormGamma, kNormBeta})
      if (present(i) && in[size_t(i)].dtype != t) return "input " + std::to_string(i) + " dtype differs from X";
    if (present(kResidual) && !present(kWout)) return "a residual without W_out";
    if (present(kNormGamma) && !present(kWout)) return "a LayerNorm without W_out";
    if (present(kMask)) {
      DType mt = in[kMask].dtype;
      if (attrs_.mask_kind == AttentionMaskKind::kBool ? !attention_bool_mask_dtype(mt) : !is_device_float(mt))
        return "mask dtype " + dtype_name(mt);
    }
    const Shape& x = in[kX].shape;
    const Shape& w = in[kWqkv].shape;
    if (x.size() != 3 || w.size() != 2) return "X or W_qkv rank";
    if (x[2] == 0) return "hidden size 0";
    const int64_t D = w[1] / 3 / attrs_.heads;
    if (D > kAttentionMaxHeadDim)
      return "head size " + std::to_string(D) + " > " + std::to_string(kAttentionMaxHeadDim);
    return {};
  }

  // The core's kernel prefetches; the out-projection's weights come after it.
  bool prefetches_l2() const override { return true; }
  // With the LayerNorm, the next product's weights come with it, after the out-projection.
  bool prefetches_l2_after() const override { return norm_; }
  std::vector<int> late_inputs() const override { return {kWout, kBout}; }

  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>&) const override {
    const Shape& x = in[kX].shape;
    const Shape& wqkv = in[kWqkv].shape;
    if (x.size() != 3 || wqkv.size() != 2) return 0;
    const int64_t B = x[0], S = x[1], N = wqkv[1] / 3;
    const size_t es = dtype_size(in[kX].dtype);
    auto present = [&](int i) { return size_t(i) < in.size() && in[size_t(i)].present; };
    if (!present(kWout)) return align_up(size_t(B * S * 3 * N) * es);
    const int64_t Sq = attention_query_count(attrs_, S);
    const size_t before_rows = workspace_bytes_before_rows(B, S, N, Sq, es);
    const Shape& wout = in[kWout].shape;
    if (!reads_sequence_residual(present(kResidual)) || wout.size() != 2) return before_rows;
    return before_rows + align_up(size_t(B * Sq * wout[1]) * es);
  }

  // Workspace: [qkv [B*S, 3N] | context [B*Sq, N] | residual rows [B*Sq, M]];
  // the offset of the last (used only when cuBLASLt refuses a C of the sequence's row pitch).
  static size_t workspace_bytes_before_rows(int64_t B, int64_t S, int64_t N, int64_t Sq, size_t es) {
    return align_up(size_t(B * S * 3 * N) * es) + align_up(size_t(B * Sq * N) * es);
  }

  // Whether the output projection reads its residual's query rows out of the whole sequence
  // (residual_rows "query" with query_rows; project_with_sequence_residual).
  bool reads_sequence_residual(bool has_residual) const {
    return attrs_.residual_at_query_rows && !attrs_.query_rows.empty() && has_residual;
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& X = ctx.input(kX);
    const Tensor& Wqkv = ctx.input(kWqkv);
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    const DType t = X.dtype();
    const int64_t B = X.dim(0), S = X.dim(1), E = X.dim(2), N = Wqkv.dim(1) / 3, rows = B * S;
    std::vector<int64_t> query_pos;
    if (!attrs_.query_rows.empty()) {
      INGOT_ASSIGN_OR_RETURN(query_pos, attention_query_positions(attrs_, S));
    }
    const int64_t out_rows = B * attention_query_count(attrs_, S);
    const bool has_out = ctx.has_input(kWout);
    const size_t es = dtype_size(t);

    char* ws = static_cast<char*>(ctx.workspace());
    void* qkv = ws;
    void* context = has_out ? ws + align_up(size_t(rows * 3 * N) * es) : Y.raw();

    if (absorbs_keys(ctx, B, S, E, N, query_pos)) {
      INGOT_RETURN_IF_ERROR(absorbed_context(ctx, B, S, E, N, query_pos[0], context));
    } else {
      bool fused = false;
      INGOT_RETURN_IF_ERROR(projected_core(ctx, B, S, E, N, query_pos, context, fused));
      if (!fused) {
        INGOT_RETURN_IF_ERROR(project_qkv(ctx, B, S, E, N, query_pos, qkv));
        INGOT_RETURN_IF_ERROR(core(ctx, B, S, N, query_pos, qkv, context));
      }
    }

    if (has_out) {
      const Tensor& Wout = ctx.input(kWout);
      const void* bout = ctx.has_input(kBout) ? ctx.input(kBout).raw() : nullptr;
      GemmDesc out;
      out.m = out_rows, out.n = Wout.dim(1), out.k = N, out.dtype = t;
      out.bias = bout;
      LayerNormArgs norm;
      if (ctx.has_input(kNormGamma)) {
        norm.gamma = ctx.input(kNormGamma).raw(), norm.epsilon = attrs_.norm_epsilon;
        norm.beta = ctx.has_input(kNormBeta) ? ctx.input(kNormBeta).raw() : nullptr;
        norm.params_constant = (!bout || ctx.host_value(kBout)) && ctx.host_value(kNormGamma) &&
                               (!norm.beta || ctx.host_value(kNormBeta));
        norm.prefetch = ctx.l2_prefetch_after();
      }
      if (!reads_sequence_residual(ctx.has_input(kResidual))) {
        if (ctx.has_input(kResidual)) out.beta = 1.f, out.c_in = ctx.input(kResidual).raw();
        if (norm.gamma)
          return product_layer_norm(ctx.handles(), out, context, Wout.raw(), Y.raw(), norm,
                                    "Attention: out-projection + LayerNorm");
        return lt_gemm(ctx.handles(), out, context, Wout.raw(), Y.raw());
      }
      INGOT_RETURN_IF_ERROR(project_with_sequence_residual(ctx, out, context, B, S, query_pos));
      if (norm.gamma)
        return layer_norm_in_place(ctx.handles(), t, Y.raw(), out.m, out.n, norm, "Attention: LayerNorm");
    }
    return Status::ok();
  }

 private:
  // qkv = X · W_qkv + b_qkv: one GEMM over every row, except for a classifier's attention on one
  // query position over many rows (B·S >= kSplitQueryRows), whose flash kernel reads Q at that
  // position alone: there K and V (columns [N, 3N)) are one GEMM over every row and Q one over
  // the B rows b·S + pos (row pitch S·E in, S·3N out), a third fewer multiplies for one more
  // launch (BERT-base at b32: N' = 1536 instead of 2304 for 4096 rows, plus 32 x 768 x 768).
  Status project_qkv(CudaComputeContext& ctx, int64_t B, int64_t S, int64_t E, int64_t N,
                     const std::vector<int64_t>& query_pos, void* qkv) const {
    const Tensor& X = ctx.input(kX);
    const Tensor& Wqkv = ctx.input(kWqkv);
    const void* bias = ctx.has_input(kBqkv) ? ctx.input(kBqkv).raw() : nullptr;
    const size_t es = dtype_size(X.dtype());
    GemmDesc all;
    all.m = B * S, all.n = 3 * N, all.k = E, all.dtype = X.dtype(), all.bias = bias;
    if (query_pos.size() != 1 || B * S < kSplitQueryRows)
      return lt_gemm(ctx.handles(), all, X.raw(), Wqkv.raw(), qkv);
    auto at = [es](const void* p, int64_t elems) { return static_cast<const char*>(p) + size_t(elems) * es; };
    char* out = static_cast<char*>(qkv);
    GemmDesc kv = all;
    kv.n = 2 * N, kv.ldb = 3 * N, kv.ldc = 3 * N, kv.bias = bias ? at(bias, N) : nullptr;
    INGOT_RETURN_IF_ERROR(
        lt_gemm(ctx.handles(), kv, X.raw(), at(Wqkv.raw(), N), out + size_t(N) * es));
    const int64_t pos = query_pos[0];
    GemmDesc q = all;
    q.m = B, q.n = N, q.lda = S * E, q.ldb = 3 * N, q.ldc = S * 3 * N;
    return lt_gemm(ctx.handles(), q, at(X.raw(), pos * E), Wqkv.raw(), out + size_t(pos * 3 * N) * es);
  }

  // context = softmax(scale · Q Kᵀ + mask) V per head, from qkv.
  Status core(CudaComputeContext& ctx, int64_t B, int64_t S, int64_t N, const std::vector<int64_t>& query_pos,
              const void* qkv, void* context) const {
    const DType t = ctx.input(kX).dtype();
    AttentionCoreArgs a;
    a.qkv = qkv, a.context = context;
    a.B = B, a.S = S, a.H = attrs_.heads, a.D = N / attrs_.heads, a.dtype = t;
    INGOT_RETURN_IF_ERROR(mask_of(ctx, B, S, a.mask));
    a.scale = attrs_.scale;
    a.sm_count = ctx.handles().sm_count;
    a.multicast = flash_multicast_enabled(ctx.handles());
    a.wgmma = flash_wgmma_enabled(ctx.handles());
    a.query_pos = query_pos.data(), a.query_count = int64_t(query_pos.size());
    a.prefetch = ctx.l2_prefetch();
    if (ctx.handles().skips("Attention.core")) return Status::ok();
    return cuda_status(launch_attention_core(a, ctx.stream()), "attention core");
  }

  // Steps 1 and 2 in one kernel (attention_projected.cu) where projected_attention_fits (S 128,
  // heads of 64, a key mask, every position queried, one (batch, head) or more a multiprocessor):
  // `fused` says whether it ran. INGOT_CUDA_QKV_ATTENTION=0: never (an A/B switch).
  Status projected_core(CudaComputeContext& ctx, int64_t B, int64_t S, int64_t E, int64_t N,
                        const std::vector<int64_t>& query_pos, void* context, bool& fused) const {
    fused = false;
    if (!query_pos.empty() || N % attrs_.heads != 0) return Status::ok();
    if (const char* e = std::getenv("INGOT_CUDA_QKV_ATTENTION"); e && std::string(e) == "0") return Status::ok();
    const CudaHandles& h = ctx.handles();
    ProjectedAttentionArgs a;
    a.x = ctx.input(kX).raw(), a.w = ctx.input(kWqkv).raw();
    a.bias = ctx.has_input(kBqkv) ? ctx.input(kBqkv).raw() : nullptr;
    a.context = context;
    a.B = B, a.S = S, a.E = E, a.H = attrs_.heads, a.D = N / attrs_.heads, a.dtype = ctx.input(kX).dtype();
    INGOT_RETURN_IF_ERROR(mask_of(ctx, B, S, a.mask));
    a.scale = attrs_.scale;
    a.sm_count = h.sm_count, a.cc_major = h.cc_major, a.cc_minor = h.cc_minor;
    a.prefetch = ctx.l2_prefetch();
    if (!projected_attention_fits(a)) return Status::ok();
    if (h.skips("Attention.core")) return fused = true, Status::ok();
    const cudaError_t e = launch_projected_attention(a, ctx.stream());
    if (e == cudaErrorNotSupported) return Status::ok();
    fused = true;
    return cuda_status(e, "attention (QKV product and core)");
  }

  // The flash kernel's multicast of K and V (attention.cu): on compute capability 9.x, where it
  // was measured (ptxas warns that the instruction may be much slower on later architectures,
  // which run the compute_90 PTX). INGOT_CUDA_FLASH_MULTICAST=0: never (an A/B switch).
  static bool flash_multicast_enabled(const CudaHandles& h) {
    if (const char* e = std::getenv("INGOT_CUDA_FLASH_MULTICAST"); e && std::string(e) == "0") return false;
    return h.cc_major == 9;
  }

  // The wgmma attention kernel (attention_wgmma.cu): built for sm_90a alone, so on compute
  // capability 9.0 exactly. INGOT_CUDA_FLASH_WGMMA=0: never (an A/B switch).
  static bool flash_wgmma_enabled(const CudaHandles& h) {
    if (const char* e = std::getenv("INGOT_CUDA_FLASH_WGMMA"); e && std::string(e) == "0") return false;
    return h.cc_major == 9 && h.cc_minor == 0;
  }

  // Whether a one-query attention takes the absorbed path (AbsorbedQueryArgs, attention_impl.h):
  // one query position over many rows (B·S >= kSplitQueryRows, where projecting K and V for
  // every row is most of the layer's tail: 17 µs of DistilBERT's 29 at b32), sizes its kernel
  // takes, and its buffers within the qkv area of the workspace. INGOT_CUDA_ABSORB_KEYS=0: never
  // (an A/B switch).
  bool absorbs_keys(CudaComputeContext& ctx, int64_t B, int64_t S, int64_t E, int64_t N,
                    const std::vector<int64_t>& query_pos) const {
    if (query_pos.size() != 1 || B * S < kSplitQueryRows || N % attrs_.heads != 0) return false;
    if (const char* e = std::getenv("INGOT_CUDA_ABSORB_KEYS"); e && std::string(e) == "0") return false;
    const DType t = ctx.input(kX).dtype();
    if (!absorbed_query_fits(t, S, E, attrs_.heads, N / attrs_.heads, ctx.handles().max_smem_per_block)) return false;
    const size_t es = dtype_size(t);
    return 2 * align_up(size_t(B * N) * es) + 2 * align_up(size_t(B * attrs_.heads * E) * es) <=
           align_up(size_t(B * S * 3 * N) * es);
  }

  // The absorbed path's context [B, N] for query position pos, in four launches:
  //   q = X[:, pos] · W_q + b_q                            [B, N]
  //   q̃_h = scale · q_h · W_k,hᵀ                          [B, H, E]   (one batched product, K's bias dropped)
  //   x̄_h = softmax(q̃_h · X_bᵀ + mask) · X_b, cbias       [B, H, E], [B, N]   (attention_absorbed.cu)
  //   context_h = x̄_h · W_v,h + cbias_h                    [B, N]      (one batched product)
  // with q, q̃, x̄ and cbias in the workspace's qkv area.
  Status absorbed_context(CudaComputeContext& ctx, int64_t B, int64_t S, int64_t E, int64_t N, int64_t pos,
                          void* context) const {
    const Tensor& X = ctx.input(kX);
    const DType t = X.dtype();
    const size_t es = dtype_size(t);
    const int64_t H = attrs_.heads, D = N / H;
    const char* w = static_cast<const char*>(ctx.input(kWqkv).raw());
    const char* bias = ctx.has_input(kBqkv) ? static_cast<const char*>(ctx.input(kBqkv).raw()) : nullptr;
    void* ws = ctx.workspace();
    char* q = static_cast<char*>(ws);
    char* qt = q + align_up(size_t(B * N) * es);
    char* xbar = qt + align_up(size_t(B * H * E) * es);
    char* cbias = xbar + align_up(size_t(B * H * E) * es);

    GemmDesc qd;
    qd.m = B, qd.n = N, qd.k = E, qd.dtype = t, qd.lda = S * E, qd.ldb = 3 * N, qd.bias = bias;
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), qd, static_cast<const char*>(X.raw()) + size_t(pos * E) * es, w, q));
    GemmDesc kd;
    kd.m = B, kd.n = E, kd.k = D, kd.batch = H, kd.dtype = t, kd.trans_b = true, kd.alpha = attrs_.scale;
    kd.lda = N, kd.stride_a = D, kd.ldb = 3 * N, kd.stride_b = D, kd.ldc = H * E, kd.stride_c = E;
    INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), kd, q, w + size_t(N) * es, qt));

    AbsorbedQueryArgs a;
    a.x = X.raw(), a.qt = qt, a.bv = bias ? bias + size_t(2 * N) * es : nullptr, a.xbar = xbar, a.cbias = cbias;
    a.B = B, a.S = S, a.E = E, a.H = H, a.D = D, a.pos = pos, a.dtype = t;
    INGOT_RETURN_IF_ERROR(mask_of(ctx, B, S, a.mask));
    a.max_smem = ctx.handles().max_smem_per_block;
    a.prefetch = ctx.l2_prefetch();
    if (!ctx.handles().skips("Attention.core"))
      INGOT_RETURN_IF_ERROR(cuda_status(launch_absorbed_query(a, ctx.stream()), "attention core (absorbed keys)"));

    GemmDesc vd;
    vd.m = B, vd.n = D, vd.k = E, vd.batch = H, vd.dtype = t, vd.beta = 1.f, vd.c_in = cbias;
    vd.lda = H * E, vd.stride_a = E, vd.ldb = 3 * N, vd.stride_b = D, vd.ldc = N, vd.stride_c = D;
    return lt_gemm(ctx.handles(), vd, xbar, w + size_t(2 * N) * es, context);
  }

  // The output projection when the residual is the whole sequence [B, S, M] (residual_rows
  // "query"): query position i's residual rows b·S + pos_i are a C with a row pitch of S·M, so
  // each position is one product over the B rows b·Sq + i of the context and the output (pitches
  // Sq·N and Sq·M): one GEMM for a classifier's token, and no Gather. Should cuBLASLt refuse C
  // and D of different pitches, the rows are copied into the workspace (one strided copy per
  // position) and added as a plain C, and that choice is kept for later runs.
  Status project_with_sequence_residual(CudaComputeContext& ctx, const GemmDesc& out, const void* context, int64_t B,
                                        int64_t S, const std::vector<int64_t>& query_pos) const {
    const Tensor& R = ctx.input(kResidual);
    const Tensor& Wout = ctx.input(kWout);
    Tensor& Y = ctx.output(0);
    const int64_t Sq = int64_t(query_pos.size()), M = out.n, N = out.k;
    const size_t es = dtype_size(out.dtype);
    char* ws = static_cast<char*>(ctx.workspace());
    const char* r = static_cast<const char*>(R.raw());
    auto per_position = [&](int64_t i) {
      GemmDesc row = out;
      row.m = B, row.lda = Sq * N, row.ldc = Sq * M, row.ldc_in = S * M;
      row.beta = 1.f, row.c_in = r + size_t(query_pos[size_t(i)] * M) * es;
      return lt_gemm(ctx.handles(), row, static_cast<const char*>(context) + size_t(i * N) * es, Wout.raw(),
                     static_cast<char*>(Y.raw()) + size_t(i * M) * es);
    };
    if (!strided_c_refused_.load(std::memory_order_relaxed)) {
      Status st = Status::ok();
      for (int64_t i = 0; i < Sq && st; ++i) st = per_position(i);
      if (st || Sq == 0) return st;
      strided_c_refused_.store(true, std::memory_order_relaxed);
    }
    char* rows = ws + workspace_bytes_before_rows(B, S, N, Sq, es);
    for (int64_t i = 0; i < Sq; ++i)
      INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(rows + size_t(i * M) * es, size_t(Sq * M) * es,
                                                   r + size_t(query_pos[size_t(i)] * M) * es, size_t(S * M) * es,
                                                   size_t(M) * es, size_t(B), cudaMemcpyDeviceToDevice, ctx.stream()));
    GemmDesc gathered = out;
    gathered.beta = 1.f, gathered.c_in = rows;
    return lt_gemm(ctx.handles(), gathered, context, Wout.raw(), Y.raw());
  }


  // The op's mask input (if any) and its rules, for either launcher: the element strides of its
  // broadcast (numpy rules) to [B, heads, S, S], 0 on broadcast axes.
  Status mask_of(CudaComputeContext& ctx, int64_t B, int64_t S, AttentionMask& a) const {
    a.filter = attrs_.filter, a.causal = attrs_.causal, a.nan_to_zero = attrs_.nan_to_zero;
    if (attrs_.mask_kind == AttentionMaskKind::kNone) return Status::ok();
    const Tensor& mask = ctx.input(kMask);
    a.data = mask.raw(), a.dtype = mask.dtype();
    const Shape& m = mask.shape();
    const Shape target{B, attrs_.heads, S, S};
    if (m.size() > 4) return invalid_argument("input 3 (mask) of shape " + shape_str(m) + " has rank above 4");
    Shape m4(4 - m.size(), 1);
    m4.insert(m4.end(), m.begin(), m.end());
    int64_t st[4], acc = 1;
    for (int i = 3; i >= 0; --i) {
      if (m4[size_t(i)] != 1 && m4[size_t(i)] != target[size_t(i)])
        return invalid_argument("input 3 (mask) of shape " + shape_str(m) + " does not broadcast to " +
                                shape_str(target));
      st[i] = m4[size_t(i)] == 1 ? 0 : acc;
      acc *= m4[size_t(i)];
    }
    a.b = st[0], a.h = st[1], a.q = st[2], a.k = st[3];
    return Status::ok();
  }

  AttentionAttrs attrs_;
  bool norm_ = false;  // inputs 7-8: the LayerNorm of Y
  mutable std::atomic<bool> strided_c_refused_{false};
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", Attention, AttentionKernel);

}  // namespace ingot::cuda
