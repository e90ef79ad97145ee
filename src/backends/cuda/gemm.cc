// MatMul, Gemm and ingot.FusedMatMul on cuBLASLt (lt_gemm): float32, float16 and bfloat16,
// float32 accumulation. Integer and float64 products are refused (they run on the CPU).
//
// MatMul's numpy batch broadcasting becomes as few cuBLASLt calls as possible: trailing batch
// dims over which B is broadcast fold into M (so A [B, S, K] x W [K, N] is one [B·S, K] GEMM),
// the longest remaining suffix of batch dims with one stride per operand becomes one strided
// batch, and only dims before that suffix are looped over on the host.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/gemm_impl.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/product_norm.h"
#include "ir/shape_util.h"

namespace ingot::cuda {
namespace {

constexpr int64_t kMaxLtDim = INT32_MAX;  // cuBLASLt's rows, columns and batch counts are int32

bool is_gemm_dtype(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// "" when every present input has A's dtype and it is one lt_gemm supports.
std::string dtype_reason(const std::vector<InputMeta>& inputs) {
  if (inputs.empty()) return "no inputs";
  DType t = inputs[0].dtype;
  if (!is_gemm_dtype(t)) return "dtype " + dtype_name(t) + " (cuBLASLt path supports float32, float16, bfloat16)";
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].present && inputs[i].dtype != t)
      return "input " + std::to_string(i) + " has dtype " + dtype_name(inputs[i].dtype) + ", A has " + dtype_name(t);
  return {};
}

std::string size_reason(int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (m > kMaxLtDim || n > kMaxLtDim || k > kMaxLtDim || batch > kMaxLtDim)
    return "matrix size m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           " batch=" + std::to_string(batch) + " exceeds cuBLASLt's int32 limits";
  return {};
}

// How one MatMul runs: `outer` host-loop iterations, each one strided-batched GEMM.
struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;  // m includes the batch dims folded into it
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  // Batch dims looped over on the host (outermost first), with each operand's element stride.
  std::vector<int64_t> outer_sizes, outer_a, outer_b, outer_c;
  int64_t outer_count() const {
    int64_t c = 1;
    for (int64_t s : outer_sizes) c *= s;
    return c;
  }
};

// Shapes as given to MatMul (numpy semantics; infer() has checked they broadcast).
MatMulPlan plan_matmul(const Shape& a, const Shape& b) {
  Shape a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  MatMulPlan p;
  p.m = a2[a2.size() - 2], p.k = a2.back(), p.n = b2.back();
  Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  const size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);

  // Batch dims of the output that are not 1, with each operand's element stride (0 where
  // that operand is broadcast) and whether the operand is broadcast there.
  struct BatchDim {
    int64_t size, a_stride, b_stride, c_stride;
    bool a_full, b_full;
  };
  std::vector<BatchDim> dims;
  int64_t a_acc = p.m * p.k, b_acc = p.k * p.n, c_acc = p.m * p.n;
  for (size_t i = r; i-- > 0;) {
    const int64_t c = std::max(ab[i], bb[i]);
    if (c != 1) {
      dims.insert(dims.begin(), BatchDim{c, ab[i] == 1 ? 0 : a_acc, bb[i] == 1 ? 0 : b_acc, c_acc, ab[i] == c,
                                         bb[i] == c});
    }
    a_acc *= ab[i], b_acc *= bb[i], c_acc *= c;
  }
  // Trailing dims where A is full and B broadcast: A's and C's rows there are contiguous
  // and multiply the same B, so they are more rows of one product.
  while (!dims.empty() && dims.back().a_full && !dims.back().b_full) {
    p.m *= dims.back().size;
    dims.pop_back();
  }
  // The longest suffix where each operand is either full throughout (one stride: the last
  // dim's) or broadcast throughout (stride 0) is one strided batch.
  size_t s = dims.size();
  if (s > 0) {
    const bool a_full = dims.back().a_full, b_full = dims.back().b_full;
    p.stride_a = dims.back().a_stride, p.stride_b = dims.back().b_stride, p.stride_c = dims.back().c_stride;
    while (s > 0 && dims[s - 1].a_full == a_full && dims[s - 1].b_full == b_full) p.batch *= dims[--s].size;
  }
  for (size_t i = 0; i < s; ++i) {
    p.outer_sizes.push_back(dims[i].size);
    p.outer_a.push_back(dims[i].a_stride);
    p.outer_b.push_back(dims[i].b_stride);
    p.outer_c.push_back(dims[i].c_stride);
  }
  return p;
}

class MatMulKernel : public CudaKernel {
 public:
  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>&) const override {
    if (inputs.size() != 2 || !inputs[0].present || !inputs[1].present) return "needs inputs A and B";
    if (std::string r = dtype_reason(inputs); !r.empty()) return r;
    if (inputs[0].shape.empty() || inputs[1].shape.empty()) return "scalar operand";
    MatMulPlan p = plan_matmul(inputs[0].shape, inputs[1].shape);
    return size_reason(p.m, p.n, p.k, p.batch);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    MatMulPlan p = plan_matmul(A.shape(), B.shape());
    if (p.k == 0)  // empty sum: all zeros (the all-zero bit pattern in every float type)
      return cuda_status(cudaMemsetAsync(Y.raw(), 0, size_t(Y.numel()) * dtype_size(Y.dtype()), ctx.stream()),
                         "MatMul: cudaMemsetAsync");
    GemmDesc d;
    d.m = p.m, d.n = p.n, d.k = p.k;
    d.batch = p.batch, d.stride_a = p.stride_a, d.stride_b = p.stride_b, d.stride_c = p.stride_c;
    d.dtype = Y.dtype();
    const size_t elem = dtype_size(d.dtype);
    const char* a = static_cast<const char*>(A.raw());
    const char* b = static_cast<const char*>(B.raw());
    char* c = static_cast<char*>(Y.raw());
    const int64_t count = p.outer_count();
    std::vector<int64_t> idx(p.outer_sizes.size(), 0);
    for (int64_t it = 0; it < count; ++it) {
      int64_t oa = 0, ob = 0, oc = 0;
      for (size_t i = 0; i < idx.size(); ++i) {
        oa += idx[i] * p.outer_a[i];
        ob += idx[i] * p.outer_b[i];
        oc += idx[i] * p.outer_c[i];
      }
      INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, a + oa * int64_t(elem), b + ob * int64_t(elem),
                                    c + oc * int64_t(elem)));
      for (size_t i = idx.size(); i-- > 0;) {  // next outer index, last dim fastest
        if (++idx[i] < p.outer_sizes[i]) break;
        idx[i] = 0;
      }
    }
    return Status::ok();
  }
};

class GemmKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    alpha_ = node.attrs.get_float("alpha", 1.f);
    beta_ = node.attrs.get_float("beta", 1.f);
    trans_a_ = node.attrs.get_int("transA", 0) != 0;
    trans_b_ = node.attrs.get_int("transB", 0) != 0;
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (inputs.size() < 2 || !inputs[0].present || !inputs[1].present) return "needs inputs A and B";
    if (std::string r = dtype_reason(inputs); !r.empty()) return r;
    if (inputs[0].shape.size() != 2 || inputs[1].shape.size() != 2 || outputs.empty() || outputs[0].shape.size() != 2)
      return "A, B and Y must be 2-D";
    if (inputs.size() > 2 && inputs[2].present && inputs[2].shape.size() > 2) return "C has rank > 2";
    const Shape& a = inputs[0].shape;
    return size_reason(outputs[0].shape[0], outputs[0].shape[1], trans_a_ ? a[0] : a[1], 1);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    Tensor& Y = ctx.output(0);
    const int64_t M = Y.dim(0), N = Y.dim(1), K = trans_a_ ? A.dim(0) : A.dim(1);
    if (Y.numel() == 0) return Status::ok();
    const DType dt = Y.dtype();
    const bool has_c = ctx.has_input(2) && beta_ != 0.f && ctx.input(2).numel() > 0;
    // C of shape [N] or [1, N] with beta 1 is a bias over columns: cuBLASLt adds it in its
    // epilogue. Any other C is broadcast into Y first and the product adds beta·Y.
    bool c_is_bias = false;
    if (has_c) {
      const Shape& cs = ctx.input(2).shape();
      const bool row_shaped = (cs.size() == 1 && cs[0] == N) || (cs.size() == 2 && cs[0] == 1 && cs[1] == N);
      c_is_bias = beta_ == 1.f && K > 0 && row_shaped;
      if (!c_is_bias) {
        std::vector<int64_t> st = broadcast_strides(cs, Shape{M, N});
        INGOT_RETURN_IF_ERROR(cuda_status(
            launch_broadcast_matrix(ctx.input(2).raw(), st[0], st[1], K == 0 ? beta_ : 1.f, Y.raw(), M, N, dt,
                                    ctx.stream()),
            "Gemm: broadcast C"));
      }
    }
    if (K == 0) {  // empty product: Y = beta·C (written above) or zeros
      if (has_c) return Status::ok();
      return cuda_status(cudaMemsetAsync(Y.raw(), 0, size_t(Y.numel()) * dtype_size(dt), ctx.stream()),
                         "Gemm: cudaMemsetAsync");
    }
    GemmDesc d;
    d.m = M, d.n = N, d.k = K;
    d.trans_a = trans_a_, d.trans_b = trans_b_;
    d.dtype = dt;
    d.alpha = alpha_;
    d.beta = has_c && !c_is_bias ? beta_ : 0.f;
    d.bias = c_is_bias ? ctx.input(2).raw() : nullptr;
    return lt_gemm(ctx.handles(), d, A.raw(), B.raw(), Y.raw());
  }

 private:
  float alpha_ = 1.f, beta_ = 1.f;
  bool trans_a_ = false, trans_b_ = false;
};

// ingot.FusedMatMul: Y = act(A x W + bias), A [..., K] (batch dims folded into M), W [K, N],
// bias [N] optional; a residual R (input 3, Y's shape, activation "") is cuBLASLt's C with
// beta = 1, added in the epilogue. A LayerNorm over Y's last axis (inputs 4-5, gamma and beta,
// attribute norm_epsilon; fold_layer_norm_into_product) runs in the product's epilogue where
// ingot's fused kernel takes the shape, else as a pass over Y in place (product_norm.h). The `precision` attribute is the CPU's choice of matrix unit; on CUDA
// the tensors' dtypes decide. output_dtype = float32 with float16/bfloat16 inputs (a Cast
// folded in by fuse_output_cast): the product is computed in the inputs' dtype into scratch and
// widened on its way into Y, one kernel where the Cast was a copy and a kernel.
//
// cuBLASLt's GELU epilogue is the tanh approximation. For float32 outputs "Gelu" stays exact
// (erf; BERT's logits are compared with the float32 reference at 1e-4) and "GeluTanh" gets a
// full-precision tanh: the product uses the BIAS epilogue and an in-place pass follows. For
// A product at most kSkinnyMaxN columns wide (a classifier's logits) is one small kernel of
// its own (gemm_skinny.cu) instead: fp32 accumulation, exact activations, Y in either dtype.
//
// float16/bfloat16 outputs both use the epilogue: erf-GELU and its tanh form differ by at most
// 4.7e-4 (at x = 2.70, where GELU is 2.69 and a float16 ulp is 2e-3), below the rounding of the
// output itself, while the separate pass cost a full extra read and write of the largest
// activation of a transformer layer (BERT-base b32 s128 on an H100: 17 us of 165 per layer).
class FusedMatMulKernel : public CudaKernel {
 public:
  enum class Act { kNone, kRelu, kGelu, kGeluTanh };

  Status init(const Node& node, int) override {
    std::string a = node.attrs.get_string("activation", "");
    if (a.empty()) act_ = Act::kNone;
    else if (a == "Relu") act_ = Act::kRelu;
    else if (a == "Gelu") act_ = Act::kGelu;
    else if (a == "GeluTanh") act_ = Act::kGeluTanh;
    else return invalid_model("attribute 'activation' = '" + a + "' must be \"\", \"Relu\", \"Gelu\" or \"GeluTanh\"");
    const int64_t out = node.attrs.get_int("output_dtype", 0);
    if (out != 0 && out != int64_t(DType::kFloat32))
      return invalid_model("attribute 'output_dtype' = " + std::to_string(out) + " must be 0 (A's dtype) or 1 (float32)");
    if (node.inputs.size() > 3 && node.inputs[3] != kNoValue && (act_ != Act::kNone || out != 0))
      return invalid_model("input 3 (residual) needs activation \"\" and output_dtype 0");
    norm_ = node.inputs.size() > 4 && node.inputs[4] != kNoValue;
    norm_epsilon_ = node.attrs.get_float("norm_epsilon", 1e-5f);
    if (norm_ && (act_ != Act::kNone || out != 0))
      return invalid_model("input 4 (norm_gamma) needs activation \"\" and output_dtype 0");
    return Status::ok();
  }

  // With the LayerNorm: the kernel before the next layer's first product, which asks for its
  // weights as the separate LayerNorm did (cuda_l2_prefetch.h).
  bool prefetches_l2() const override { return norm_; }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (inputs.size() < 2 || !inputs[0].present || !inputs[1].present) return "needs inputs A and W";
    if (std::string r = dtype_reason(inputs); !r.empty()) return r;
    if (!outputs.empty() && outputs[0].dtype != inputs[0].dtype && outputs[0].dtype != DType::kFloat32)
      return "output dtype " + dtype_name(outputs[0].dtype);
    const Shape& a = inputs[0].shape;
    const Shape& w = inputs[1].shape;
    if (a.empty() || w.size() != 2) return "A must have rank >= 1 and W rank 2";
    const int64_t m = w[0] > 0 ? shape_numel(a) / w[0] : 0;
    // A residual rides in the GEMM's epilogue: only on the plain cuBLASLt path (rows of Y
    // 16-byte aligned, wider than the narrow kernel's, a nonempty product).
    if (inputs.size() > 3 && inputs[3].present &&
        (w[0] == 0 || w[1] <= kSkinnyMaxN || (w[1] * int64_t(dtype_size(inputs[0].dtype))) % kRowAlign != 0))
      return "a residual with a product of K = 0, at most " + std::to_string(kSkinnyMaxN) +
             " columns or rows that are not 16-byte multiples";
    // So does a LayerNorm (over the product's dense rows).
    if (norm_ && (w[0] == 0 || w[1] <= kSkinnyMaxN || (w[1] * int64_t(dtype_size(inputs[0].dtype))) % kRowAlign != 0))
      return "a LayerNorm with a product of K = 0, at most " + std::to_string(kSkinnyMaxN) +
             " columns or rows that are not 16-byte multiples";
    return size_reason(m, w[1], w[0], 1);
  }

  // A width N whose rows are not 16-byte multiples (GPT-2's 50257-token LM head: every row of W
  // and Y starts unaligned) leaves cuBLASLt only its slow unaligned kernels (4x the memory time
  // of the head on an H100). For a constant W a copy with rows padded to 16 bytes (zero columns
  // on the right) is kept, and a constant bias gets the same zero padding; the product is then
  // computed over the padded width N' (an aligned pitch alone is not enough: cuBLASLt's heuristic
  // still picks unaligned kernels for an odd N) into scratch, a block at a time (scratch_blocks),
  // and each block's columns below N are copied into Y (one more pass over Y). Writing float32
  // logits straight into Y's odd-width rows is no way out either: cuBLASLt then runs a
  // cutlass_75 align1 kernel, 2.76 ms for DistilGPT2's b32 LM head (session 41).
  Status prepare(const CudaPrepareContext& ctx) override {
    const Tensor* w = ctx.constant(1);
    if (!w || w->rank() != 2 || w->numel() == 0) return Status::ok();
    const DType dt = w->dtype();
    if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kBFloat16) return Status::ok();
    const int64_t es = int64_t(dtype_size(dt)), K = w->dim(0), N = w->dim(1);
    if ((N * es) % kRowAlign == 0 || N <= kSkinnyMaxN) return Status::ok();
    const int64_t np = (N * es + kRowAlign - 1) / kRowAlign * kRowAlign / es;
    auto padded_rows = [&](const Tensor& t, int64_t rows) -> Expected<Tensor> {
      Tensor padded(dt, rows == 0 ? Shape{np} : Shape{rows, np});  // zero-filled
      for (int64_t r = 0; r < std::max<int64_t>(rows, 1); ++r)
        std::memcpy(static_cast<std::byte*>(padded.raw()) + r * np * es,
                    static_cast<const std::byte*>(t.raw()) + r * N * es, size_t(N * es));
      return ctx.upload(padded);
    };
    if (const Tensor* b = ctx.constant(2)) {
      if (b->dtype() != dt || b->numel() != N) return Status::ok();
      auto d = padded_rows(*b, 0);
      if (!d) return d.status();
      b_padded_ = *d;
    }
    auto d = padded_rows(*w, K);
    if (!d) return d.status();
    w_padded_ = *d;
    return Status::ok();
  }

  size_t workspace_bytes(const std::vector<InputMeta>& in, const std::vector<OutputMeta>& out) const override {
    if (in.size() < 2 || out.empty() || out[0].shape.empty() || out[0].shape.back() <= kSkinnyMaxN) return 0;
    if (norm_) {  // the partial products of a K split (product_norm.h)
      const int64_t n = out[0].shape.back(), m = n ? shape_numel(out[0].shape) / n : 0;
      return in[1].shape.size() == 2 ? product_norm_split_bytes(in[0].dtype, m, n, in[1].shape[0]) : 0;
    }
    const bool padded = w_padded_.defined() && in[1].value;
    if (!padded && out[0].dtype == in[0].dtype) return 0;
    const int64_t n = out[0].shape.back(), m = n ? shape_numel(out[0].shape) / n : 0;
    const int64_t es = int64_t(dtype_size(in[0].dtype));
    const ScratchBlocks b = scratch_blocks(m, padded ? w_padded_.dim(1) : n, es, kScratchBudgetBytes);
    return size_t(b.rows * b.cols * es);
  }

  Status compute(CudaComputeContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor& W = ctx.input(1);
    Tensor& Y = ctx.output(0);
    if (Y.numel() == 0) return Status::ok();
    const DType dt = A.dtype();  // the product's; Y is float32 when output_dtype widens it
    const int64_t K = W.dim(0), N = W.dim(1), M = Y.numel() / N;
    const void* bias = ctx.has_input(2) ? ctx.input(2).raw() : nullptr;
    if (K == 0) {
      if (Y.dtype() == dt) return empty_product(ctx, Y.raw(), M, N, bias, dt);
      // One row of act(bias) in scratch, widened into every row of Y.
      void* row = ctx.workspace();
      INGOT_RETURN_IF_ERROR(empty_product(ctx, row, 1, N, bias, dt));
      return cuda_status(launch_copy_rows(row, 0, dt, Y.data<float>(), DType::kFloat32, N, M, N, ctx.stream()),
                         "FusedMatMul: widen the product to float32");
    }

    if (N <= kSkinnyMaxN)
      return cuda_status(launch_skinny_product(A.raw(), W.raw(), bias, Y.raw(), M, K, N, dt, Y.dtype() != dt,
                                               act_ != Act::kNone, pointwise(act_), ctx.stream()),
                         "FusedMatMul: skinny product");
    GemmDesc d;
    d.m = M, d.n = N, d.k = K;
    d.dtype = dt;
    d.bias = bias;
    if (ctx.has_input(3)) d.beta = 1.f, d.c_in = ctx.input(3).raw();
    if (norm_) {
      LayerNormArgs n;
      n.gamma = ctx.input(4).raw(), n.beta = ctx.has_input(5) ? ctx.input(5).raw() : nullptr;
      n.epsilon = norm_epsilon_;
      n.params_constant = (!bias || ctx.host_value(2)) && ctx.host_value(4) && (!n.beta || ctx.host_value(5));
      n.prefetch = ctx.l2_prefetch();
      n.scratch = ctx.workspace(), n.scratch_bytes = ctx.workspace_bytes();
      return product_layer_norm(ctx.handles(), d, A.raw(), W.raw(), Y.raw(), n, "FusedMatMul: product + LayerNorm");
    }
    bool gelu_after = false;
    PointwiseActivation after = PointwiseActivation::kGeluErf;
    switch (act_) {
      case Act::kNone: break;
      case Act::kRelu: d.activation = GemmActivation::kRelu; break;
      case Act::kGelu:
        if (dt == DType::kFloat32) gelu_after = true;
        else d.activation = GemmActivation::kGeluTanh;
        break;
      case Act::kGeluTanh:
        if (dt == DType::kFloat32) gelu_after = true, after = PointwiseActivation::kGeluTanh;
        else d.activation = GemmActivation::kGeluTanh;
        break;
    }
    const bool bias_padded = !bias || (b_padded_.defined() && ctx.host_value(2));
    const bool padded = w_padded_.defined() && ctx.host_value(1) && bias_padded && w_padded_.dtype() == dt;
    if (padded || Y.dtype() != dt) {
      const Scratch through = padded ? Scratch{w_padded_.raw(), w_padded_.dim(1), bias ? b_padded_.raw() : nullptr}
                                     : Scratch{W.raw(), N, bias};
      const int64_t es = int64_t(dtype_size(dt));
      const ScratchBlocks b = scratch_blocks(M, through.width, es, kScratchBudgetBytes);
      if (ctx.workspace_bytes() < size_t(b.rows * b.cols * es))
        return internal_error("FusedMatMul: workspace smaller than planned");
      INGOT_RETURN_IF_ERROR(product_through_scratch(ctx, d, through, A, Y, b));
    } else {
      INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, A.raw(), W.raw(), Y.raw()));
    }
    if (!gelu_after) return Status::ok();
    return cuda_status(launch_activation_inplace(Y.raw(), Y.numel(), after, dt, ctx.stream()), "FusedMatMul: GELU");
  }

 private:
  // K = 0: y [M, N] of dtype dt = act(bias) in every row, or act(0) = 0 for every activation here.
  Status empty_product(CudaComputeContext& ctx, void* y, int64_t M, int64_t N, const void* bias, DType dt) const {
    if (!bias)
      return cuda_status(cudaMemsetAsync(y, 0, size_t(M * N) * dtype_size(dt), ctx.stream()),
                         "FusedMatMul: cudaMemsetAsync");
    INGOT_RETURN_IF_ERROR(cuda_status(launch_broadcast_matrix(bias, 0, 1, 1.f, y, M, N, dt, ctx.stream()),
                                      "FusedMatMul: broadcast bias"));
    if (act_ == Act::kNone) return Status::ok();
    return cuda_status(launch_activation_inplace(y, M * N, pointwise(act_), dt, ctx.stream()),
                       "FusedMatMul: activation");
  }

  // The weights (and bias) a product through scratch reads, and its width: the padded copies
  // over N' columns, or the node's own over N.
  struct Scratch {
    const void* w;
    int64_t width;
    const void* bias;
  };

  // The scratch a product through it may use: one block, which stays in L2 (50 MB on an H100 or
  // H200) with the slice of W and the rows of A it is computed from until its copy-out reads it.
  // DistilGPT2's LM head at b32 s128 (4096 x 50257 x 768, float32 logits; H200, session 41):
  // 4096-column blocks of every row 1.609-1.613 ms against 1.627 for the former 667-row chunks of
  // 64 MiB, each of which read all of W (77 MB, more than L2 holds); 24 MiB row chunks were slower
  // (1.731 against 1.576 on another board).
  static constexpr int64_t kScratchBudgetBytes = int64_t(32) << 20;

  // d (m, n, k, bias, epilogue) over `through`'s width into scratch, block by block (b), each
  // block's columns below N then copied into Y (widened when Y is float32).
  Status product_through_scratch(CudaComputeContext& ctx, GemmDesc d, const Scratch& through, const Tensor& A,
                                 Tensor& Y, ScratchBlocks b) const {
    const int64_t M = d.m, N = d.n, K = d.k, es = int64_t(dtype_size(d.dtype)), ys = int64_t(dtype_size(Y.dtype()));
    std::byte* scratch = static_cast<std::byte*>(ctx.workspace());
    d.ldb = through.width;
    d.ldc = b.cols;
    for (int64_t r0 = 0; r0 < M; r0 += b.rows) {
      d.m = std::min(b.rows, M - r0);
      const void* a = static_cast<const std::byte*>(A.raw()) + r0 * K * es;
      for (int64_t c0 = 0; c0 < N; c0 += b.cols) {
        d.n = std::min(b.cols, through.width - c0);  // the product's columns (through W's padding)
        const int64_t cols = std::min(b.cols, N - c0);  // those that are Y's
        const void* w = static_cast<const std::byte*>(through.w) + c0 * es;
        d.bias = through.bias ? static_cast<const std::byte*>(through.bias) + c0 * es : nullptr;
        std::byte* y = static_cast<std::byte*>(Y.raw()) + (r0 * N + c0) * ys;
        INGOT_RETURN_IF_ERROR(lt_gemm(ctx.handles(), d, a, w, scratch));
        INGOT_RETURN_IF_ERROR(cuda_status(
            launch_copy_rows(scratch, b.cols, d.dtype, y, Y.dtype(), N, d.m, cols, ctx.stream()),
            Y.dtype() != d.dtype ? "FusedMatMul: widen the product to float32" : "FusedMatMul: copy out of the padded product"));
      }
    }
    return Status::ok();
  }

  static PointwiseActivation pointwise(Act a) {
    return a == Act::kRelu ? PointwiseActivation::kRelu
           : a == Act::kGelu ? PointwiseActivation::kGeluErf
                             : PointwiseActivation::kGeluTanh;
  }

  static constexpr int64_t kRowAlign = 16;
  Act act_ = Act::kNone;
  bool norm_ = false;  // inputs 4-5: the LayerNorm after the product
  float norm_epsilon_ = 1e-5f;
  Tensor w_padded_;  // device copy of a constant W with rows padded to 16 bytes (when its rows are not)
  Tensor b_padded_;  // its constant bias, zero-padded to the same width
};

}  // namespace

ScratchBlocks scratch_blocks(int64_t m, int64_t width, int64_t elem_bytes, int64_t budget_bytes) {
  const int64_t pitch = (std::max<int64_t>(width, 1) + 7) / 8 * 8, row_bytes = std::max<int64_t>(m, 1) * elem_bytes;
  const int64_t cols = budget_bytes / row_bytes / 8 * 8;
  if (cols >= 8) return {std::max<int64_t>(m, 1), std::min(cols, pitch)};
  return {std::max<int64_t>(1, std::min(m, budget_bytes / (pitch * elem_bytes))), pitch};
}

INGOT_REGISTER_CUDA_KERNEL("", MatMul, MatMulKernel);
INGOT_REGISTER_CUDA_KERNEL("", Gemm, GemmKernel);
INGOT_REGISTER_CUDA_KERNEL("ingot", FusedMatMul, FusedMatMulKernel);

}  // namespace ingot::cuda
