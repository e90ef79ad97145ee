// MatMul (numpy semantics: 1-D operands, batch broadcasting) and Gemm (transA/transB, alpha,
// beta, unidirectionally broadcast C) on oneDNN's matmul primitive. Float16/bfloat16/float64
// go through float32.
#include "backends/cpu/dnnl_util.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using namespace dnnl_util;
using dt = dnnl::memory::data_type;

struct MatmulPrim {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

bool is_float(DType t) { return dtype_is_float(t); }

// Computes dst[b, M, N] = alpha * A x B (+ beta * dst when accumulate) with oneDNN.
// a_dims/b_dims/c_dims are same-rank oneDNN dims (batch dims may be 1 for broadcast);
// a_strides/b_strides describe the (possibly transposed) layout.
std::shared_ptr<MatmulPrim> make_matmul(const dnnl::memory::dims& ad, const dnnl::memory::dims& as,
                                        const dnnl::memory::dims& bd, const dnnl::memory::dims& bs,
                                        const dnnl::memory::dims& cd, float alpha, float beta, bool accumulate) {
  dnnl::memory::desc amd(ad, dt::f32, as), bmd(bd, dt::f32, bs);
  dnnl::memory::dims cs(cd.size());
  int64_t acc = 1;
  for (int i = int(cd.size()) - 1; i >= 0; --i) {
    cs[size_t(i)] = acc;
    acc *= cd[size_t(i)];
  }
  dnnl::memory::desc cmd(cd, dt::f32, cs);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (accumulate) {
    dnnl::post_ops po;
    po.append_sum(beta);
    attr.set_post_ops(po);
  }
  dnnl::matmul::desc d(amd, bmd, cmd);
  auto p = std::make_shared<MatmulPrim>();
  p->pd = dnnl::matmul::primitive_desc(d, attr, cpu_engine());
  p->prim = dnnl::matmul(p->pd);
  return p;
}

void run_matmul(const MatmulPrim& p, const float* a, const float* b, float* c) {
  auto& eng = cpu_engine();
  dnnl::memory am(p.pd.src_desc(), eng, const_cast<float*>(a));
  dnnl::memory bm(p.pd.weights_desc(), eng, const_cast<float*>(b));
  dnnl::memory cm(p.pd.dst_desc(), eng, c);
  execute(p.prim, p.pd, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
}

class MatMulKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 inputs (A, B), got " + std::to_string(ctx.num_inputs()));
    DType t = ctx.input_dtype(0);
    if (!is_float(t)) return unsupported("input 0 (A) has dtype " + dtype_name(t) + "; MatMul supports float types");
    if (ctx.input_dtype(1) != t)
      return invalid_model("input 1 (B) has dtype " + dtype_name(ctx.input_dtype(1)) + ", A has " + dtype_name(t));
    INGOT_ASSIGN_OR_RETURN(Shape out, out_shape(ctx.input_shape(0), ctx.input_shape(1)));
    ctx.set_output(0, t, out);
    return Status::ok();
  }

  static Expected<Shape> out_shape(const Shape& a, const Shape& b) {
    if (a.empty() || b.empty()) return invalid_argument("MatMul inputs must have rank >= 1 (got a scalar)");
    Shape a2 = a, b2 = b;
    if (a2.size() == 1) a2.insert(a2.begin(), 1);
    if (b2.size() == 1) b2.push_back(1);
    int64_t K = a2.back(), K2 = b2[b2.size() - 2];
    if (K != K2)
      return invalid_argument("A " + shape_str(a) + " has K=" + std::to_string(K) + " but B " + shape_str(b) +
                              " has K=" + std::to_string(K2));
    Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
    auto batch = broadcast_shapes({ab, bb});
    if (!batch) return invalid_argument("batch dims of A " + shape_str(a) + " and B " + shape_str(b) + " do not broadcast");
    Shape out = *batch;
    if (a.size() != 1) out.push_back(a2[a2.size() - 2]);
    if (b.size() != 1) out.push_back(b2.back());
    return out;
  }

  Status compute(ComputeContext& ctx) const override {
    return guard([&] { return do_compute(ctx); });
  }

 private:
  Status do_compute(ComputeContext& ctx) const {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    Tensor& Y = ctx.output(0);
    Shape a2 = A.shape(), b2 = B.shape();
    if (a2.size() == 1) a2.insert(a2.begin(), 1);
    if (b2.size() == 1) b2.push_back(1);
    int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
    if (Y.numel() == 0) return Status::ok();
    Tensor Af = to_f32(A), Bf = to_f32(B);
    Tensor Yf = Y.dtype() == DType::kFloat32 ? Y : Tensor(DType::kFloat32, Y.shape());
    if (K == 0) {
      std::fill(Yf.data<float>(), Yf.data<float>() + Yf.numel(), 0.f);
    } else {
      Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
      size_t r = std::max(ab.size(), bb.size());
      ab.insert(ab.begin(), r - ab.size(), 1);
      bb.insert(bb.begin(), r - bb.size(), 1);
      bool b_no_batch = shape_numel(bb) == 1;
      dnnl::memory::dims ad, bd, cd;
      if (b_no_batch) {  // fold A's batch into M: one big 2-D GEMM
        ad = {shape_numel(ab) * M, K};
        bd = {K, N};
        cd = {shape_numel(ab) * M, N};
      } else {
        Shape cb(r);
        for (size_t i = 0; i < r; ++i) cb[i] = std::max(ab[i], bb[i]);
        if (r > 10) return unsupported("MatMul supports at most 10 batch dims");
        ad = to_dims(ab), bd = to_dims(bb), cd = to_dims(cb);
        ad.push_back(M), ad.push_back(K);
        bd.push_back(K), bd.push_back(N);
        cd.push_back(M), cd.push_back(N);
      }
      auto strides = [](const dnnl::memory::dims& d) {
        dnnl::memory::dims s(d.size());
        int64_t acc = 1;
        for (int i = int(d.size()) - 1; i >= 0; --i) s[size_t(i)] = acc, acc *= d[size_t(i)];
        return s;
      };
      auto as = strides(ad), bs = strides(bd);
      std::string key = key_of({ad, bd, cd});
      auto p = cache_.get(key, [&] { return make_matmul(ad, as, bd, bs, cd, 1.f, 0.f, false); });
      run_matmul(*p, Af.data<float>(), Bf.data<float>(), Yf.data<float>());
    }
    if (Y.dtype() != DType::kFloat32) from_f32(Yf, Y);
    return Status::ok();
  }

  mutable Cache<MatmulPrim> cache_;
};

class GemmKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    alpha_ = node.attrs.get_float("alpha", 1.f);
    beta_ = node.attrs.get_float("beta", 1.f);
    trans_a_ = node.attrs.get_int("transA", 0) != 0;
    trans_b_ = node.attrs.get_int("transB", 0) != 0;
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 or 3 inputs (A, B, C), got " + std::to_string(ctx.num_inputs()));
    DType t = ctx.input_dtype(0);
    if (!is_float(t)) return unsupported("input 0 (A) has dtype " + dtype_name(t) + "; Gemm supports float types");
    for (int i = 1; i < 3; ++i)
      if (ctx.has_input(i) && ctx.input_dtype(i) != t)
        return invalid_model("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) +
                             ", A has " + dtype_name(t));
    const Shape& a = ctx.input_shape(0);
    const Shape& b = ctx.input_shape(1);
    if (a.size() != 2) return invalid_argument("input 0 (A) must be 2-D, got shape " + shape_str(a));
    if (b.size() != 2) return invalid_argument("input 1 (B) must be 2-D, got shape " + shape_str(b));
    int64_t M = trans_a_ ? a[1] : a[0], K = trans_a_ ? a[0] : a[1];
    int64_t K2 = trans_b_ ? b[1] : b[0], N = trans_b_ ? b[0] : b[1];
    if (K != K2)
      return invalid_argument("A " + shape_str(a) + (trans_a_ ? " (transA)" : "") + " has K=" + std::to_string(K) +
                              " but B " + shape_str(b) + (trans_b_ ? " (transB)" : "") + " has K=" + std::to_string(K2));
    if (ctx.has_input(2)) {
      const Shape& c = ctx.input_shape(2);
      auto bc = broadcast_shapes({c, Shape{M, N}});
      if (c.size() > 2 || !bc || *bc != Shape{M, N})
        return invalid_argument("input 2 (C) of shape " + shape_str(c) + " does not broadcast to " +
                                shape_str(Shape{M, N}));
    }
    ctx.set_output(0, t, {M, N});
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    return guard([&] { return do_compute(ctx); });
  }

 private:
  Status do_compute(ComputeContext& ctx) const {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    Tensor& Y = ctx.output(0);
    int64_t M = Y.dim(0), N = Y.dim(1);
    int64_t K = trans_a_ ? A.dim(0) : A.dim(1);
    if (Y.numel() == 0) return Status::ok();
    Tensor Yf = Y.dtype() == DType::kFloat32 ? Y : Tensor(DType::kFloat32, Y.shape());
    float* y = Yf.data<float>();
    bool has_c = ctx.has_input(2) && beta_ != 0.f && ctx.input(2).numel() > 0;
    if (has_c) {  // broadcast C into Y; oneDNN adds beta * Y via a sum post-op
      Tensor Cf = to_f32(ctx.input(2));
      auto cs = broadcast_strides(Cf.shape(), Y.shape());
      const float* c = Cf.data<float>();
      parallel_for(M, N, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          for (int64_t j = 0; j < N; ++j) y[i * N + j] = c[i * cs[0] + j * cs[1]];
      });
    }
    if (K == 0) {
      if (!has_c) std::fill(y, y + Yf.numel(), 0.f);
      else for (int64_t i = 0; i < Yf.numel(); ++i) y[i] *= beta_;
    } else {
      Tensor Af = to_f32(A), Bf = to_f32(B);
      dnnl::memory::dims ad{M, K}, bd{K, N}, cd{M, N};
      dnnl::memory::dims as = trans_a_ ? dnnl::memory::dims{1, M} : dnnl::memory::dims{K, 1};
      dnnl::memory::dims bs = trans_b_ ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1};
      std::string key = key_of({ad, bd, {has_c}});
      auto p = cache_.get(key, [&] { return make_matmul(ad, as, bd, bs, cd, alpha_, beta_, has_c); });
      run_matmul(*p, Af.data<float>(), Bf.data<float>(), y);
    }
    if (Y.dtype() != DType::kFloat32) from_f32(Yf, Y);
    return Status::ok();
  }

  float alpha_ = 1.f, beta_ = 1.f;
  bool trans_a_ = false, trans_b_ = false;
  mutable Cache<MatmulPrim> cache_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", MatMul, MatMulKernel);
INGOT_REGISTER_KERNEL(cpu, "", Gemm, GemmKernel);

}  // namespace ingot
