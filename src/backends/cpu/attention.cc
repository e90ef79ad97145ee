// ingot.Attention: one transformer self-attention block (the fuse_attention pass makes these).
//
// Contract (domain "ingot", version 1):
//   inputs   0 X      [B, S, E]   float32/float16/bfloat16 (float64 goes through float32)
//            1 W_qkv  [E, 3N]     Q, K and V projection weights side by side (Q | K | V)
//            2 b_qkv  [3N]        optional (absent: no bias)
//            3 mask   optional; broadcastable (numpy rules) to [B, num_heads, S, S]
//                     mask_kind "add":  float, added to the scaled scores
//                     mask_kind "bool": bool, true = attend; false adds mask_filter_value (or an
//                                       integer type: nonzero = true, as Cast to bool reads it)
//            4 W_out  [N, M]      optional output projection (absent: the output is the context)
//            5 b_out  [M]         optional
//            6 residual [B, Sq, M] optional, needs W_out: added to the output projection
//                     (fold_residual_into_product, CUDA engines: there in the GEMM's epilogue);
//                     [B, S, M] with residual_rows "query": its rows at the query positions
//            7 norm_gamma [M] optional, needs W_out: the output is the LayerNorm over its last
//                     axis of y = projection + b_out (+ residual): (y - mean) / sqrt(var +
//                     norm_epsilon) * gamma + beta, population variance (fold_layer_norm_into_product
//                     folds the LayerNorm after it; CUDA normalises in the epilogue)
//            8 norm_beta  [M] optional, needs norm_gamma (absent: 0)
//   attrs    num_heads (int, divides N), scale (float, multiplies Q·Kᵀ), causal (0/1: key j > query
//            i is masked, without reading any tensor), mask_kind ("none" | "add" | "bool"),
//            mask_filter_value (float, default -inf), nan_to_zero (0/1: probabilities that are NaN
//            — a row whose every key is masked with -inf — become 0, the exporters'
//            Where(IsNaN(p), 0, p)), precision ("fp32" | "bf16": the CPU's matrix unit for the
//            two projections, set by bf16 engines; the attention core stays float32)
//            query_rows (ints, optional: the query positions whose rows are output, in that order;
//            negative counts from the end; made by gather_rows_early for a classifier's token),
//            residual_rows ("output", the default | "query": input 6 is the whole sequence, read
//            at the query positions — the classifier token's residual without a Gather),
//            norm_epsilon (float, default 1e-5: the LayerNorm's of inputs 7 and 8)
//   output   [B, Sq, M] (or [B, Sq, N] without W_out), X's dtype; Sq = S, or query_rows' count.
//
// Per head h: P = softmax(scale · Q_h K_hᵀ + mask), context_h = P V_h, heads concatenated along
// the last axis, then context · W_out + b_out.
//
// Implementation: the QKV projection is one oneDNN matmul whose weights are reordered into
// oneDNN's preferred layout once (prepare(), for constant weights); then every (batch, head,
// block of 64 queries) is an independent task: K_h is packed transposed and V_h contiguous into
// per-task scratch, scores/softmax/context run row-block by row-block in cache (register-tiled
// QKᵀ and P·V microkernels, attention_util.h, AVX-512 when the CPU has it, else AVX2), and the
// context is written straight into [B*S, N] (no transposed tensors are materialised). Keys that are masked
// with -inf at the end of every row of a block (padding, causal) are never computed. The output
// projection is a second pre-packed matmul.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>

#include "backends/cpu/attention_util.h"
#include "backends/cpu/bf16_products.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/fused_matmul_util.h"
#include "backends/cpu/gemm_few_rows.h"
#include "backends/cpu/row_norm.h"
#include "io/mapped_file.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "ir/attention_attrs.h"

namespace ingot {
namespace {

using namespace dnnl_util;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int kX = 0, kWqkv = 1, kBqkv = 2, kMask = 3, kWout = 4, kBout = 5, kResidual = 6, kNormGamma = 7,
              kNormBeta = 8;

// y[M, N] = x[M, K] · W[K, N] (+ b) on oneDNN (fused_matmul_util's primitives), with W
// reordered once into the primitive's preferred layout when it is a constant. bf16 (the node's
// precision attribute, as FusedMatMul): weights packed in bfloat16, x converted per call,
// float32 accumulation and output.
class PackedLinear {
 public:
  // Keeps constant weights/bias as float32 (the constant itself when it is float32); `w` null:
  // weights arrive at run time.
  // Throws dnnl::error (callers are inside guard).
  // `narrow_bf16`: float32 products, but few-row ones read a bf16 copy of the weights
  // (gemm_few_rows_w16; FusedMatMul does the same).
  void set_constant(const Tensor* w, const Tensor* b, bool bf16, bool narrow_bf16) {
    bf16_ = bf16;
    if (w) w_src_ = w->raw(), w_ = to_f32(*w);
    if (b) b_src_ = b->raw(), b_ = to_f32(*b).clone();
    if (w && w_.rank() == 2) {
      fused_matmul::Spec spec;
      spec.K = w_.dim(0), spec.N = w_.dim(1), spec.bf16 = bf16, spec.bias = b != nullptr;
      layout_ = fused_matmul::constant_weights_layout(spec, fused_matmul::kRepresentativeM);
      if (narrow_bf16) few_layout_ = fused_matmul::bf16_narrow_panel_layout(spec.K, spec.N);
    }
  }

  Status run(const float* x, int64_t M, int64_t K, int64_t N, const Tensor& W, const Tensor* B, float* y) const {
    bool packed = w_.defined() && W.raw() == w_src_;
    Tensor wf = packed ? w_ : to_f32(W);
    Tensor bf;
    if (B) bf = b_.defined() && B->raw() == b_src_ ? b_ : to_f32(*B);
    fused_matmul::Spec spec;
    spec.K = K, spec.N = N, spec.bf16 = bf16_, spec.bias = B != nullptr;
    for (const dnnl::memory::desc* few : {&few_layout_, &layout_})
      if (packed && !few->is_zero() && cpu::packed_kernel_reads(*few, M)) {
        cpu::gemm_packed(packed_weights(*few), x, M, B ? bf.data<float>() : nullptr, fused_matmul::Activation::kNone,
                         y);
        return Status::ok();
      }
    std::string key = key_of({{M, K, N, packed, B != nullptr}});
    auto p = prims_.get(key, [&] {
      auto r = std::make_shared<Prim>();
      if (!packed) {
        r->pd = fused_matmul::make_pd(spec, M, tag::ab);
      } else {
        try {
          r->pd = fused_matmul::make_pd(spec, M, layout_);
        } catch (const dnnl::error&) {  // no implementation reads that layout at this M
          r->pd = fused_matmul::make_pd(spec, M, tag::any);
        }
      }
      r->prim = dnnl::matmul(r->pd);
      if (bf16_)
        r->to_bf16 = dnnl::reorder(dnnl::reorder::primitive_desc(
            cpu_engine(), dnnl::memory::desc({M, K}, dt::f32, tag::ab), cpu_engine(), r->pd.src_desc()));
      return r;
    });
    auto& eng = cpu_engine();
    dnnl::memory src(p->pd.src_desc(), eng,
                     bf16_ ? thread_buffers().src.get(p->pd.src_desc().get_size()) : const_cast<float*>(x));
    if (bf16_) {
      dnnl::memory plain({{M, K}, dt::f32, tag::ab}, eng, const_cast<float*>(x));
      dnnl::stream st(eng);
      p->to_bf16.execute(st, plain, src);
      st.wait();
    }
    dnnl::memory wm = packed  ? packed_weights(p->pd.weights_desc())
                      : bf16_ ? fused_matmul::pack_weights(wf.data<float>(), K, N, p->pd.weights_desc())
                              : dnnl::memory(p->pd.weights_desc(), eng, wf.raw());
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, dnnl::memory(p->pd.dst_desc(), eng, y)}};
    if (B) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p->pd.bias_desc(), eng, bf.raw()));
    execute(p->prim, p->pd, std::move(args));
    return Status::ok();
  }

 private:
  struct Prim {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
    dnnl::reorder to_bf16;  // bf16 only: x into the primitive's source layout
  };

  // The constant weights in layout `want` (bfloat16 when it says so), packed on first use and
  // kept (one per layout).
  dnnl::memory packed_weights(const dnnl::memory::desc& want) const {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [d, m] : packed_)
      if (d == want) return m;
    dnnl::memory m = fused_matmul::pack_weights(w_.data<float>(), w_.dim(0), w_.dim(1), want);
    packed_.emplace_back(want, m);
    drop_file_pages(w_.raw(), w_.nbytes());  // an engine file's weights: read again only to pack another layout
    return m;
  }

  bool bf16_ = false;
  const void* w_src_ = nullptr;
  const void* b_src_ = nullptr;
  Tensor w_, b_;
  mutable Cache<Prim> prims_;
  mutable std::mutex mu_;
  mutable std::vector<std::pair<dnnl::memory::desc, dnnl::memory>> packed_;
  dnnl::memory::desc layout_;  // of the constant weights' packed copy (constant_weights_layout)
  dnnl::memory::desc few_layout_;  // narrow_bf16: the few-row copy's layout; else zero
};

// The attention core compiled twice: for AVX-512 (chosen at run time) and for the AVX2 baseline.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) __attribute__((noinline)) void core_avx512(
    const attention_util::Core& c, int64_t begin, int64_t end) {
  attention_util::core_tasks<16>(c, begin, end);
}
__attribute__((noinline)) void core_avx2(const attention_util::Core& c, int64_t begin, int64_t end) {
  attention_util::core_tasks<8>(c, begin, end);
}
// INGOT_ATTENTION_NO_AVX512 (any value) forces the AVX2 build, so tests can cover it.
bool has_avx512() {
  static const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return cpu && !std::getenv("INGOT_ATTENTION_NO_AVX512");
}

// A bool mask as bool: integer masks become "nonzero" (the Cast to bool they stand for).
Tensor as_bool(const Tensor& m) {
  if (m.dtype() == DType::kBool) return m;
  Tensor b(DType::kBool, m.shape());
  for (int64_t i = 0; i < m.numel(); ++i) b.data<bool>()[i] = m.scalar_as_double(i) != 0;
  return b;
}

std::unique_ptr<float[]> uninit(int64_t n) { return std::unique_ptr<float[]>(new float[size_t(std::max<int64_t>(n, 1))]); }

class AttentionKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }
  Status init(const Node& node, int) override {
    auto a = parse_attention_attrs(node);
    if (!a) return a.status();
    attrs_ = *a;
    const std::string p = node.attrs.get_string("precision", "fp32");
    if (p != "fp32" && p != "bf16") return invalid_model("attribute 'precision' = '" + p + "' must be \"fp32\" or \"bf16\"");
    bf16_ = p == "bf16" && cpu::bf16_products_pay();  // else float32 (bf16_products.h)
    narrow_bf16_ = p == "bf16" && !bf16_;
    return Status::ok();
  }

  Status prepare(const std::vector<const Tensor*>& c) override {
    auto at = [&](int i) { return i < int(c.size()) ? c[size_t(i)] : nullptr; };
    return guard([&] {
      qkv_.set_constant(at(kWqkv), at(kBqkv), bf16_, narrow_bf16_);
      out_.set_constant(at(kWout), at(kBout), bf16_, narrow_bf16_);
      return Status::ok();
    });
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(kX) || !ctx.has_input(kWqkv))
      return invalid_model("needs inputs X and W_qkv (inputs 0 and 1)");
    DType t = ctx.input_dtype(kX);
    if (!dtype_is_float(t)) return unsupported("input 0 (X) has dtype " + dtype_name(t) + "; expected a float type");
    const Shape& x = ctx.input_shape(kX);
    if (x.size() != 3) return invalid_argument("input 0 (X) must be [batch, sequence, hidden], got " + shape_str(x));
    INGOT_ASSIGN_OR_RETURN(Dims d, dims(x, ctx.input_shape(kWqkv), ctx.has_input(kWout) ? &ctx.input_shape(kWout) : nullptr));
    for (int i : {kWqkv, kBqkv, kWout, kBout, kResidual, kNormGamma, kNormBeta})
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) +
                                ", X has " + dtype_name(t));
    if (ctx.has_input(kBqkv) && ctx.input_shape(kBqkv) != Shape{3 * d.N})
      return invalid_argument("input 2 (b_qkv) has shape " + shape_str(ctx.input_shape(kBqkv)) + ", expected [" +
                              std::to_string(3 * d.N) + "]");
    if (ctx.has_input(kBout) && (!ctx.has_input(kWout) || ctx.input_shape(kBout) != Shape{d.M}))
      return invalid_argument("input 5 (b_out) has shape " + shape_str(ctx.input_shape(kBout)) +
                              (ctx.has_input(kWout) ? ", expected [" + std::to_string(d.M) + "]" : " but W_out is absent"));
    if (attrs_.mask_kind == AttentionMaskKind::kNone && ctx.has_input(kMask))
      return invalid_model("input 3 (mask) is given but mask_kind is none");
    if (attrs_.mask_kind != AttentionMaskKind::kNone) {
      if (!ctx.has_input(kMask)) return invalid_model("mask_kind is set but input 3 (mask) is absent");
      DType mt = ctx.input_dtype(kMask);
      if (attrs_.mask_kind == AttentionMaskKind::kBool ? !attention_bool_mask_dtype(mt) : !dtype_is_float(mt))
        return invalid_argument("input 3 (mask) has dtype " + dtype_name(mt) + "; mask_kind " +
                                (attrs_.mask_kind == AttentionMaskKind::kBool ? "bool needs bool or an integer type"
                                                                              : "add needs a float type"));
      INGOT_RETURN_IF_ERROR(mask_strides(ctx.input_shape(kMask), d).status());
    }
    INGOT_RETURN_IF_ERROR(attention_query_positions(attrs_, d.S).status());
    const Shape out{d.B, attention_query_count(attrs_, d.S), d.M};
    const Shape residual = attrs_.residual_at_query_rows ? Shape{d.B, d.S, d.M} : out;
    if (ctx.has_input(kResidual) && (!ctx.has_input(kWout) || ctx.input_shape(kResidual) != residual))
      return invalid_argument("input 6 (residual) has shape " + shape_str(ctx.input_shape(kResidual)) +
                              (ctx.has_input(kWout) ? ", expected " + shape_str(residual) : " but W_out is absent"));
    if (ctx.has_input(kNormBeta) && !ctx.has_input(kNormGamma))
      return invalid_model("input 8 (norm_beta) is given without input 7 (norm_gamma)");
    for (int i : {kNormGamma, kNormBeta})
      if (ctx.has_input(i) && (!ctx.has_input(kWout) || ctx.input_shape(i) != Shape{d.M}))
        return invalid_argument("input " + std::to_string(i) + (i == kNormGamma ? " (norm_gamma)" : " (norm_beta)") +
                                " has shape " + shape_str(ctx.input_shape(i)) +
                                (ctx.has_input(kWout) ? ", expected [" + std::to_string(d.M) + "]" : " but W_out is absent"));
    ctx.set_output(0, t, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return guard([&] { return do_compute(ctx); });
  }

 private:
  struct Dims {
    int64_t B, S, E, N, H, D, M;
  };
  struct MaskStrides {
    int64_t b = 0, h = 0, q = 0, k = 0;
  };

  Expected<Dims> dims(const Shape& x, const Shape& w, const Shape* wo) const {
    Dims d{x[0], x[1], x[2], 0, attrs_.heads, 0, 0};
    if (w.size() != 2 || w[0] != d.E || w[1] % 3)
      return invalid_argument("input 1 (W_qkv) has shape " + shape_str(w) + "; expected [" + std::to_string(d.E) +
                              ", 3*N] for X " + shape_str(x));
    d.N = w[1] / 3;
    if (d.N == 0 || d.N % attrs_.heads)
      return invalid_argument("projection width " + std::to_string(d.N) + " (W_qkv " + shape_str(w) +
                              ") is not a positive multiple of num_heads " + std::to_string(attrs_.heads));
    d.D = d.N / attrs_.heads;
    d.M = d.N;
    if (wo) {
      if (wo->size() != 2 || (*wo)[0] != d.N)
        return invalid_argument("input 4 (W_out) has shape " + shape_str(*wo) + "; expected [" + std::to_string(d.N) +
                                ", M]");
      d.M = (*wo)[1];
    }
    return d;
  }

  // Element strides of a mask broadcast (numpy rules) to [B, H, S, S].
  static Expected<MaskStrides> mask_strides(const Shape& m, const Dims& d) {
    Shape target{d.B, d.H, d.S, d.S};
    auto bad = [&] {
      return invalid_argument("input 3 (mask) of shape " + shape_str(m) + " does not broadcast to [batch, heads, "
                              "sequence, sequence] = " + shape_str(target));
    };
    if (m.size() > 4) return bad();
    Shape m4(4 - m.size(), 1);
    m4.insert(m4.end(), m.begin(), m.end());
    int64_t st[4], acc = 1;
    for (int i = 3; i >= 0; --i) {
      if (m4[size_t(i)] != 1 && m4[size_t(i)] != target[size_t(i)]) return bad();
      st[i] = m4[size_t(i)] == 1 ? 0 : acc;
      acc *= m4[size_t(i)];
    }
    return MaskStrides{st[0], st[1], st[2], st[3]};
  }

  Status do_compute(ComputeContext& ctx) const {
    const Tensor& X = ctx.input(kX);
    const bool has_out = ctx.has_input(kWout);
    INGOT_ASSIGN_OR_RETURN(Dims d, dims(X.shape(), ctx.input(kWqkv).shape(), has_out ? &ctx.input(kWout).shape() : nullptr));
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    const int64_t rows = d.B * d.S;
    INGOT_ASSIGN_OR_RETURN(std::vector<int64_t> qpos, attention_query_positions(attrs_, d.S));
    const int64_t Sq = int64_t(qpos.size()), out_rows = d.B * Sq;
    Tensor xf = to_f32(X);
    auto qkv = uninit(rows * 3 * d.N);
    if (d.E == 0) {
      std::fill(qkv.get(), qkv.get() + rows * 3 * d.N, 0.f);
      if (ctx.has_input(kBqkv)) {
        Tensor b = to_f32(ctx.input(kBqkv));
        for (int64_t r = 0; r < rows; ++r) std::copy_n(b.data<float>(), 3 * d.N, qkv.get() + r * 3 * d.N);
      }
    } else {
      INGOT_RETURN_IF_ERROR(qkv_.run(xf.data<float>(), rows, d.E, 3 * d.N, ctx.input(kWqkv),
                                     ctx.has_input(kBqkv) ? &ctx.input(kBqkv) : nullptr, qkv.get()));
    }

    // The context lands in Y directly when nothing follows and Y is float32.
    bool direct = !has_out && Y.dtype() == DType::kFloat32;
    std::unique_ptr<float[]> ctx_buf;
    float* context = direct ? Y.data<float>() : (ctx_buf = uninit(out_rows * d.N)).get();

    Tensor mask;
    MaskStrides ms;
    if (attrs_.mask_kind != AttentionMaskKind::kNone) {
      INGOT_ASSIGN_OR_RETURN(ms, mask_strides(ctx.input(kMask).shape(), d));
      mask = attrs_.mask_kind == AttentionMaskKind::kAdd ? to_f32(ctx.input(kMask)) : as_bool(ctx.input(kMask));
    }
    heads(d, qkv.get(), mask, ms, attrs_.query_rows.empty() ? nullptr : qpos.data(), Sq, context);

    if (has_out) {
      bool f32 = Y.dtype() == DType::kFloat32;
      Tensor yf = f32 ? Y : Tensor(DType::kFloat32, Y.shape());
      if (d.N == 0) {
        std::fill(yf.data<float>(), yf.data<float>() + yf.numel(), 0.f);
        if (ctx.has_input(kBout)) {
          Tensor b = to_f32(ctx.input(kBout));
          for (int64_t r = 0; r < out_rows; ++r) std::copy_n(b.data<float>(), d.M, yf.data<float>() + r * d.M);
        }
      } else {
        INGOT_RETURN_IF_ERROR(out_.run(context, out_rows, d.N, d.M, ctx.input(kWout),
                                       ctx.has_input(kBout) ? &ctx.input(kBout) : nullptr, yf.data<float>()));
      }
      if (ctx.has_input(kResidual)) {
        Tensor r = to_f32(ctx.input(kResidual));
        float* y = yf.data<float>();
        const float* rp = r.data<float>();
        // Output row o = b·Sq + i reads residual row o, or b·S + qpos[i] with residual_rows "query".
        parallel_for(out_rows, 1, [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) {
            const int64_t src = attrs_.residual_at_query_rows ? (o / Sq) * d.S + qpos[size_t(o % Sq)] : o;
            for (int64_t j = 0; j < d.M; ++j) y[o * d.M + j] += rp[src * d.M + j];
          }
        });
      }
      if (ctx.has_input(kNormGamma)) {
        const Tensor gamma = to_f32(ctx.input(kNormGamma));
        const Tensor beta = ctx.has_input(kNormBeta) ? to_f32(ctx.input(kNormBeta)) : Tensor();
        cpu::layer_norm_rows(yf.data<float>(), out_rows, d.M, gamma.data<float>(),
                             beta.defined() ? beta.data<float>() : nullptr, attrs_.norm_epsilon);
      }
      if (!f32) from_f32(yf, Y);
    } else if (!direct) {
      Tensor view = Tensor::wrap(DType::kFloat32, Y.shape(), context, nullptr);
      from_f32(view, Y);
    }
    return Status::ok();
  }

  // The attention core: qkv [B*S, 3N] -> context [B*Sq, N] (the query positions qpos, or all S
  // when null), on AVX-512 where the CPU has it.
  void heads(const Dims& d, const float* qkv, const Tensor& mask, const MaskStrides& ms, const int64_t* qpos,
             int64_t Sq, float* context) const {
    const float kNegInf = -std::numeric_limits<float>::infinity();
    attention_util::Core c{d.B, d.S, d.H, d.D, d.N, qkv, context,
                           attrs_.mask_kind == AttentionMaskKind::kAdd ? mask.data<float>() : nullptr,
                           attrs_.mask_kind == AttentionMaskKind::kBool ? mask.data<bool>() : nullptr,
                           ms.b, ms.h, ms.q, ms.k, attrs_.scale, attrs_.filter, attrs_.causal, attrs_.nan_to_zero,
                           // Masked keys can be skipped only when masking means exactly "probability 0".
                           attrs_.mask_kind == AttentionMaskKind::kAdd || (attrs_.mask_kind == AttentionMaskKind::kBool && attrs_.filter == kNegInf),
                           Sq, qpos};
    const int64_t qblocks = (Sq + attention_util::kQueryBlock - 1) / attention_util::kQueryBlock;
    const bool avx512 = has_avx512();
    parallel_for(d.B * d.H * qblocks, std::max<int64_t>(1, attention_util::kQueryBlock * d.S * d.D * 4),
                 [&](int64_t begin, int64_t end) {
                   if (avx512) core_avx512(c, begin, end);
                   else core_avx2(c, begin, end);
                 });
  }

  AttentionAttrs attrs_;
  bool bf16_ = false;  // precision "bf16": the projections in bfloat16
  bool narrow_bf16_ = false;  // precision "bf16" without bf16 products: few-row projections on bf16 weights
  PackedLinear qkv_, out_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", Attention, AttentionKernel);

}  // namespace ingot
