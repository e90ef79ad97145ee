// ingot.FusedMatMul (made by the fuse_linear pass): Y = act(A x W + bias) with A [..., K]
// (batch dims folded into M), W [K, N], bias [N] optional, activation "" | "Relu" | "Gelu" |
// "GeluTanh", precision "fp32" | "bf16", output_dtype 0 (A's dtype) | 1 (float32: a float16 or
// bfloat16 product written in float32, the Cast after it folded in by fuse_output_cast). One
// oneDNN matmul with the bias as its bias argument
// and the activation as an eltwise post-op, so the output is written once.
// Input 3, a residual R of Y's shape (fold_residual_into_product, CUDA engines), makes
// Y = A x W + bias + R; it needs activation "" and output_dtype 0. Here R is added after the
// product (CUDA adds it in the GEMM's epilogue).
// Inputs 4 norm_gamma [N] and 5 norm_beta [N] (optional even with 4; absent: 0) and attribute
// norm_epsilon (default 1e-5), a LayerNorm of the product's output that
// fold_layer_norm_into_product folds (CUDA engines), make Y the LayerNorm over the last axis of
// s = A x W + bias (+ R): (s - mean(s)) / sqrt(var(s) + norm_epsilon) * gamma + beta,
// population variance; like the residual they need activation "" and output_dtype 0. Here the
// rows are normalised after the product (row_norm.h, LayerNormalization's arithmetic); CUDA does
// it in the product's epilogue.
//
// Constant weights are reordered once, in prepare(), into a blocked layout (the per-call reorder
// of plain weights would otherwise cost about as much as a small-M GEMM itself): float32 into
// 32-column panels (fused_matmul::constant_weights_layout), which oneDNN's brgemm matmul reads
// and so does gemm_few_rows, which computes products of at most kFewRowsMax rows faster than
// oneDNN; bf16 into the layout oneDNN's AMX matmul prefers, which gemm_few_rows_bf16 reads for
// products of at most 16 rows. On CPUs with AVX2 and no AVX-512, whose oneDNN matmul reads no
// blocked layout, float32 weights go into 16-column panels instead and gemm_panel16 computes
// every M. A primitive for an M whose implementation cannot read the packed layout gets its own
// packed copy.
//
// precision "bf16": weights packed as bf16, A converted to bf16 per call (one oneDNN
// reorder), f32 accumulation and output, on the AMX tile units. On CPUs without AMX the
// product computes in float32 instead (bf16_products.h says why), on float32 weights for many
// rows and, for at most kFewRowsMax rows (which stream their weights), on a bf16 copy
// widened as it is read (gemm_few_rows_w16).
#include <cmath>

#include "backends/cpu/bf16_products.h"
#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/fused_matmul_util.h"
#include "backends/cpu/gemm_few_rows.h"
#include "backends/cpu/row_norm.h"
#include "io/mapped_file.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using namespace dnnl_util;
using namespace fused_matmul;

struct Prim {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory weights;          // packed weights for this primitive; empty on the plain path
  dnnl::reorder src_to_bf16;     // bf16 only
  dnnl::reorder::primitive_desc src_to_bf16_pd;
};

class FusedMatMulKernel : public OpKernel {
 public:
  bool writes_every_output_element() const override { return true; }
  Status init(const Node& node, int) override {
    std::string a = node.attrs.get_string("activation", "");
    if (!parse_activation(a, spec_.act))
      return invalid_model("attribute 'activation' = '" + a + "' must be \"\", \"Relu\", \"Gelu\" or \"GeluTanh\"");
    std::string p = node.attrs.get_string("precision", "fp32");
    if (p != "fp32" && p != "bf16") return invalid_model("attribute 'precision' = '" + p + "' must be \"fp32\" or \"bf16\"");
    spec_.bf16 = p == "bf16" && cpu::bf16_products_pay();
    narrow_bf16_ = p == "bf16" && !spec_.bf16;
    spec_.bias = node.inputs.size() > 2 && node.inputs[2] != kNoValue;
    const int64_t out = node.attrs.get_int("output_dtype", 0);
    if (out != 0 && out != int64_t(DType::kFloat32))
      return invalid_model("attribute 'output_dtype' = " + std::to_string(out) + " must be 0 (A's dtype) or 1 (float32)");
    float_output_ = out != 0;
    auto present = [&](size_t i) { return node.inputs.size() > i && node.inputs[i] != kNoValue; };
    residual_ = present(3);
    if (residual_ && (spec_.act != Activation::kNone || float_output_))
      return invalid_model("input 3 (residual) needs activation \"\" and output_dtype 0");
    norm_ = present(4);
    norm_beta_ = present(5);
    norm_epsilon_ = node.attrs.get_float("norm_epsilon", 1e-5f);
    if (norm_beta_ && !norm_) return invalid_model("input 5 (norm_beta) is given without input 4 (norm_gamma)");
    // The LayerNorm normalises the sum itself, in A's dtype: no activation in between, no widened output.
    if (norm_ && spec_.act != Activation::kNone)
      return invalid_model("attribute 'activation' = '" + a + "' with input 4 (norm_gamma): the LayerNorm needs activation \"\"");
    if (norm_ && float_output_)
      return invalid_model("attribute 'output_dtype' = " + std::to_string(out) +
                           " with input 4 (norm_gamma): the LayerNorm needs output_dtype 0");
    if (norm_ && !(norm_epsilon_ >= 0))
      return invalid_model("attribute 'norm_epsilon' = " + std::to_string(norm_epsilon_) + " must be >= 0");
    return Status::ok();
  }

  Status prepare(const std::vector<const Tensor*>& consts) override {
    const Tensor* w = consts.size() > 1 ? consts[1] : nullptr;
    if (!w || w->dtype() != DType::kFloat32 || w->rank() != 2 || w->numel() == 0) return Status::ok();
    Spec s = spec_;
    s.K = w->dim(0), s.N = w->dim(1);
    // A packing failure is not fatal: compute() then uses the plain weights and reports
    // whatever oneDNN says there.
    Status st = guard([&] {
      packed_ = pack_weights(w->data<float>(), s.K, s.N, constant_weights_layout(s, kRepresentativeM));
      if (narrow_bf16_ && cpu::few_rows_supported())
        packed_few_ = pack_weights(w->data<float>(), s.K, s.N, bf16_narrow_panel_layout(s.K, s.N));
      packed_from_ = w->raw();
      packed_spec_ = s;
      // compute() reads the packed copies; the plain weights only where none fits (re-read then).
      drop_file_pages(w->raw(), w->nbytes());
      return Status::ok();
    });
    if (!st.ok()) packed_from_ = nullptr;
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 6 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 to 6 inputs (A, W, bias, residual, norm_gamma, norm_beta), got " +
                           std::to_string(ctx.num_inputs()));
    const DType t = ctx.input_dtype(0);
    if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16)
      return unsupported("input 0 (A) has dtype " + dtype_name(t) + "; FusedMatMul supports float32, float16 and bfloat16");
    static const char* const names[] = {"A", "W", "bias", "residual", "norm_gamma", "norm_beta"};
    for (int i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has dtype " +
                                dtype_name(ctx.input_dtype(i)) + ", A has " + dtype_name(t));
    if (ctx.has_input(2) != spec_.bias) return internal_error("bias presence differs from the node's inputs");
    const Shape& a = ctx.input_shape(0);
    const Shape& w = ctx.input_shape(1);
    if (a.empty()) return invalid_argument("input 0 (A) must have rank >= 1, got a scalar");
    if (w.size() != 2) return invalid_argument("input 1 (W) must be 2-D, got shape " + shape_str(w));
    if (a.back() != w[0])
      return invalid_argument("A " + shape_str(a) + " has K=" + std::to_string(a.back()) + " but W " + shape_str(w) +
                              " has K=" + std::to_string(w[0]));
    if (spec_.bias && (ctx.input_shape(2).size() != 1 || ctx.input_shape(2)[0] != w[1]))
      return invalid_argument("input 2 (bias) must have shape [" + std::to_string(w[1]) + "], got " +
                              shape_str(ctx.input_shape(2)));
    Shape out(a.begin(), a.end() - 1);
    out.push_back(w[1]);
    if (ctx.has_input(3) != residual_) return internal_error("residual presence differs from the node's inputs");
    if (residual_ && ctx.input_shape(3) != out)
      return invalid_argument("input 3 (residual) has shape " + shape_str(ctx.input_shape(3)) + ", Y has " +
                              shape_str(out));
    if (ctx.has_input(4) != norm_ || ctx.has_input(5) != norm_beta_)
      return internal_error("norm_gamma/norm_beta presence differs from the node's inputs");
    for (int i : {4, 5})
      if (ctx.has_input(i) && ctx.input_shape(i) != Shape{w[1]})
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " +
                                shape_str(ctx.input_shape(i)) + ", expected [" + std::to_string(w[1]) + "] (W's columns)");
    ctx.set_output(0, float_output_ ? DType::kFloat32 : t, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    // float16/bfloat16 graphs (precision conversion) run the float32 path on widened copies.
    if (DType t = ctx.input(0).dtype(); t != DType::kFloat32)
      return cpu::compute_via_float32(ctx, t, [&](ComputeContext& c) { return guard([&] { return do_compute(c); }); });
    return guard([&] { return do_compute(ctx); });
  }

 private:
  Status do_compute(ComputeContext& ctx) const {
    INGOT_RETURN_IF_ERROR(product(ctx));
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    float* y = Y.data<float>();
    if (residual_) {
      const float* r = ctx.input(3).data<float>();
      parallel_for(Y.numel(), 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] += r[i];
      });
    }
    if (norm_) {
      const int64_t n = ctx.input(1).dim(1);
      cpu::layer_norm_rows(y, Y.numel() / n, n, ctx.input(4).data<float>(),
                           norm_beta_ ? ctx.input(5).data<float>() : nullptr, norm_epsilon_);
    }
    return Status::ok();
  }

  // Y = act(A x W + bias).
  Status product(ComputeContext& ctx) const {
    const Tensor& A = ctx.input(0);
    const Tensor& W = ctx.input(1);
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    Spec s = spec_;
    s.K = W.dim(0), s.N = W.dim(1);
    int64_t M = Y.numel() / s.N;
    const float* bias = s.bias ? ctx.input(2).data<float>() : nullptr;
    if (s.K == 0) return fill_bias_only(Y.data<float>(), M, s.N, bias);

    bool packed = packed_from_ != nullptr && W.raw() == packed_from_ && s.K == packed_spec_.K && s.N == packed_spec_.N;
    if (packed && packed_few_ && cpu::packed_kernel_reads(packed_few_.get_desc(), M)) {
      cpu::gemm_packed(packed_few_, A.data<float>(), M, bias, s.act, Y.data<float>());
      return Status::ok();
    }
    if (packed && cpu::packed_kernel_reads(packed_.get_desc(), M)) {
      cpu::gemm_packed(packed_, A.data<float>(), M, bias, s.act, Y.data<float>());
      return Status::ok();
    }
    std::string key = std::to_string(M);
    key += packed ? 'p' : 'u';
    auto p = cache_.get(key, [&] { return make_prim(s, M, packed, W); });

    auto& eng = cpu_engine();
    dnnl::stream st(eng);
    std::unordered_map<int, dnnl::memory> args;
    dnnl::memory src_f32({{M, s.K}, dt::f32, tag::ab}, eng, const_cast<void*>(A.raw()));
    if (s.bf16) {  // convert A into the thread's bf16 buffer
      dnnl::memory src(p->pd.src_desc(), eng, dnnl_util::thread_buffers().src.get(p->pd.src_desc().get_size()));
      p->src_to_bf16.execute(st, src_f32, src);
      args.emplace(DNNL_ARG_SRC, src);
    } else {
      args.emplace(DNNL_ARG_SRC, src_f32);
    }
    if (packed) {
      args.emplace(DNNL_ARG_WEIGHTS, p->weights);
    } else if (s.bf16) {  // weights that change per call: convert them per call
      args.emplace(DNNL_ARG_WEIGHTS, pack_weights(W.data<float>(), s.K, s.N, p->pd.weights_desc()));
    } else {
      args.emplace(DNNL_ARG_WEIGHTS, dnnl::memory(p->pd.weights_desc(), eng, const_cast<void*>(W.raw())));
    }
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, s.N}, dt::f32, tag::ab}, eng, const_cast<float*>(bias)));
    args.emplace(DNNL_ARG_DST, dnnl::memory(p->pd.dst_desc(), eng, Y.raw()));
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(p->pd.scratchpad_desc()));
    p->prim.execute(st, args);
    st.wait();
    return Status::ok();
  }

  // Builds the primitive for M rows. On the packed path it reads the packed weights, unless
  // oneDNN has no implementation for their layout at this M: then it packs a copy of its own
  // (W is the constant that was packed).
  std::shared_ptr<Prim> make_prim(const Spec& s, int64_t M, bool packed, const Tensor& W) const {
    auto p = std::make_shared<Prim>();
    if (packed) {
      try {
        p->pd = make_pd(s, M, packed_.get_desc());
        p->weights = packed_;
      } catch (const dnnl::error&) {
        p->pd = make_pd(s, M, tag::any);
        p->weights = pack_weights(W.data<float>(), s.K, s.N, p->pd.weights_desc());
      }
    } else {
      p->pd = make_pd(s, M, tag::ab);
    }
    p->prim = dnnl::matmul(p->pd);
    if (s.bf16) {
      auto& eng = cpu_engine();
      p->src_to_bf16_pd = dnnl::reorder::primitive_desc(eng, dnnl::memory::desc({M, s.K}, dt::f32, tag::ab), eng,
                                                        p->pd.src_desc());
      p->src_to_bf16 = dnnl::reorder(p->src_to_bf16_pd);
    }
    return p;
  }

  // K = 0: the product is empty, so Y = act(bias) (or act(0)).
  Status fill_bias_only(float* y, int64_t M, int64_t N, const float* bias) const {
    for (int64_t j = 0; j < N; ++j) {
      float x = bias ? bias[j] : 0.f;
      switch (spec_.act) {
        case Activation::kNone: break;
        case Activation::kRelu: x = x > 0 ? x : 0.f; break;
        case Activation::kGelu: x = 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f)); break;
        case Activation::kGeluTanh:
          x = 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
          break;
      }
      for (int64_t i = 0; i < M; ++i) y[i * N + j] = x;
    }
    return Status::ok();
  }

  Spec spec_;
  bool float_output_ = false;  // output_dtype = float32
  bool residual_ = false;      // input 3 is given
  bool norm_ = false;          // input 4 (norm_gamma) is given: Y is LayerNorm'd
  bool norm_beta_ = false;     // input 5 (norm_beta) is given
  float norm_epsilon_ = 1e-5f;
  // precision bf16 where bf16 products do not pay (bf16_products.h): float32 products, except
  // that few-row ones read bf16 weights (packed_few_), half the bytes of their stream.
  bool narrow_bf16_ = false;
  // Set once in prepare(), read-only afterwards.
  dnnl::memory packed_;
  dnnl::memory packed_few_;  // narrow_bf16_: the weights in bf16_narrow_panel_layout
  const void* packed_from_ = nullptr;  // the constant W's buffer that packed_ was made from
  Spec packed_spec_;
  mutable Cache<Prim> cache_;  // by M and packed/plain path; mutex-protected
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", FusedMatMul, FusedMatMulKernel);

}  // namespace ingot
