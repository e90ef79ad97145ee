// Integer matmul/conv: MatMulInteger, ConvInteger (int32 out) and QLinearMatMul, QLinearConv
// (requantized out). Exact int32 accumulation: zero points are subtracted up front, convs go
// through im2col, and one blocked integer GEMM does the work.
#include <cmath>
#include <limits>

#include "backends/cpu/dnnl_util.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using dnnl_util::Spatial;

bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// C[M,N] = A[M,K] x B[K,N] in int32 (A and B already have their zero points removed).
void igemm(int64_t M, int64_t N, int64_t K, const int32_t* A, const int32_t* B, int32_t* C) {
  constexpr int64_t NB = 512;
  int64_t nblk = (N + NB - 1) / NB;
  parallel_for(M * nblk, K * std::min(N, NB), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t m = t / nblk, n0 = (t % nblk) * NB, n1 = std::min(N, n0 + NB);
      int32_t* c = C + m * N;
      for (int64_t n = n0; n < n1; ++n) c[n] = 0;
      for (int64_t k = 0; k < K; ++k) {
        int32_t a = A[m * K + k];
        if (a == 0) continue;
        const int32_t* bk = B + k * N;
        for (int64_t n = n0; n < n1; ++n) c[n] += a * bk[n];
      }
    }
  });
}

std::vector<int32_t> read_ints(const Tensor* t) {
  if (!t) return {0};
  std::vector<int32_t> v(size_t(t->numel()));
  for (int64_t i = 0; i < t->numel(); ++i) v[size_t(i)] = int32_t(t->scalar_as_int(i));
  if (v.empty()) v.push_back(0);
  return v;
}
std::vector<double> read_doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.scalar_as_double(i);
  return v;
}

// Checks a scale/zero-point input: scalar (or 1 element), or 1-D of `per` elements if allowed.
Status check_param(InferContext& ctx, int i, const char* name, int64_t per, bool allow_per) {
  if (!ctx.has_input(i)) return Status::ok();
  const Shape& s = ctx.input_shape(i);
  int64_t n = shape_numel(s);
  if (s.size() <= 1 && n == 1) return Status::ok();
  if (allow_per && s.size() == 1 && n == per) return Status::ok();
  return invalid_argument("input " + std::to_string(i) + " (" + name + ") has shape " + shape_str(s) +
                          (allow_per ? "; expected a scalar or [" + std::to_string(per) + "]" : "; expected a scalar"));
}

// Requantizes int32 accumulators: y = saturate(round(acc * scale_col / ys) + yz).
template <class Q>
void requant(const int32_t* acc, int64_t rows, int64_t cols, bool per_row, const std::vector<double>& mult, int32_t yz,
             Q* y) {
  const double lo = double(std::numeric_limits<Q>::min()), hi = double(std::numeric_limits<Q>::max());
  parallel_for(rows, cols, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double m = mult.size() == 1 ? mult[0] : mult[size_t(per_row ? r : c)];
        double v = std::nearbyint(double(acc[r * cols + c]) * m) + yz;
        y[r * cols + c] = Q(std::min(hi, std::max(lo, v)));
      }
  });
}

// ---------------------------------------------------------------- matmul
// Integer batched matmul with numpy broadcasting; a_zp per row (size M) or scalar, b_zp per
// column (size N) or scalar. Returns int32 [batch..., M, N] (1-D operands squeezed).
Expected<Shape> imatmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return invalid_argument("inputs must have rank >= 1 (got a scalar)");
  Shape a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  if (a2.back() != b2[b2.size() - 2])
    return invalid_argument("A " + shape_str(a) + " has K=" + std::to_string(a2.back()) + " but B " + shape_str(b) +
                            " has K=" + std::to_string(b2[b2.size() - 2]));
  auto batch = broadcast_shapes({Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2)});
  if (!batch) return invalid_argument("batch dims of A " + shape_str(a) + " and B " + shape_str(b) + " do not broadcast");
  Shape out = *batch;
  if (a.size() != 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() != 1) out.push_back(b2.back());
  return out;
}

void imatmul(const Tensor& A, const Tensor& B, const std::vector<int32_t>& za, const std::vector<int32_t>& zb,
             int32_t* out) {
  Shape a2 = A.shape(), b2 = B.shape();
  if (a2.size() == 1) a2.insert(a2.begin(), 1);
  if (b2.size() == 1) b2.push_back(1);
  int64_t M = a2[a2.size() - 2], K = a2.back(), N = b2.back();
  Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  Shape cb = *broadcast_shapes({ab, bb});
  auto as = broadcast_strides(ab, cb), bs = broadcast_strides(bb, cb);
  int64_t nb = shape_numel(cb);
  auto load = [](const Tensor& t, int64_t off, int64_t n, std::vector<int32_t>& dst) {
    dst.resize(size_t(n));
    if (t.dtype() == DType::kUInt8) for (int64_t i = 0; i < n; ++i) dst[size_t(i)] = t.data<uint8_t>()[off + i];
    else for (int64_t i = 0; i < n; ++i) dst[size_t(i)] = t.data<int8_t>()[off + i];
  };
  std::vector<int32_t> Ai, Bi;
  auto cstr = strides_of(cb);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t ao = 0, bo = 0, r = bi;
    for (size_t d = 0; d < cb.size(); ++d) {
      int64_t c = r / cstr[d];
      r %= cstr[d];
      ao += c * as[d], bo += c * bs[d];
    }
    load(A, ao * M * K, M * K, Ai);
    load(B, bo * K * N, K * N, Bi);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) Ai[size_t(m * K + k)] -= za[za.size() == 1 ? 0 : size_t(m)];
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) Bi[size_t(k * N + n)] -= zb[zb.size() == 1 ? 0 : size_t(n)];
    igemm(M, N, K, Ai.data(), Bi.data(), out + bi * M * N);
  }
}

int64_t dim_m(const Shape& a) { return a.size() == 1 ? 1 : a[a.size() - 2]; }
int64_t dim_n(const Shape& b) { return b.size() == 1 ? 1 : b.back(); }

class MatMulIntegerKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 4 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 to 4 inputs (A, B, a_zero_point, b_zero_point), got " + std::to_string(ctx.num_inputs()));
    for (int i = 0; i < 4; ++i)
      if (ctx.has_input(i) && !is_q8(ctx.input_dtype(i)))
        return unsupported("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) + "; expected int8 or uint8");
    INGOT_ASSIGN_OR_RETURN(Shape out, imatmul_shape(ctx.input_shape(0), ctx.input_shape(1)));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 2, "a_zero_point", dim_m(ctx.input_shape(0)), true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 3, "b_zero_point", dim_n(ctx.input_shape(1)), true));
    ctx.set_output(0, DType::kInt32, out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    auto za = read_ints(ctx.has_input(2) ? &ctx.input(2) : nullptr);
    auto zb = read_ints(ctx.has_input(3) ? &ctx.input(3) : nullptr);
    imatmul(ctx.input(0), ctx.input(1), za, zb, ctx.output(0).data<int32_t>());
    return Status::ok();
  }
};

class QLinearMatMulKernel : public OpKernel {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 8)
      return invalid_model("needs 8 inputs (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point), got " +
                           std::to_string(ctx.num_inputs()));
    for (int i = 0; i < 8; ++i)
      if (!ctx.has_input(i) && i != 7) return invalid_model("input " + std::to_string(i) + " is required");
    for (int i : {0, 2, 3, 5, 7})
      if (ctx.has_input(i) && !is_q8(ctx.input_dtype(i)))
        return unsupported("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) + "; expected int8 or uint8");
    for (int i : {1, 4, 6})
      if (!dtype_is_float(ctx.input_dtype(i)))
        return invalid_model("input " + std::to_string(i) + " (scale) has dtype " + dtype_name(ctx.input_dtype(i)));
    INGOT_ASSIGN_OR_RETURN(Shape out, imatmul_shape(ctx.input_shape(0), ctx.input_shape(3)));
    int64_t M = dim_m(ctx.input_shape(0)), N = dim_n(ctx.input_shape(3));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 1, "a_scale", M, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 2, "a_zero_point", M, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 4, "b_scale", N, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 5, "b_zero_point", N, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 6, "y_scale", 1, false));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 7, "y_zero_point", 1, false));
    if (shape_numel(ctx.input_shape(1)) > 1 && shape_numel(ctx.input_shape(4)) > 1)
      return unsupported("per-row a_scale together with per-column b_scale is not supported");
    ctx.set_output(0, ctx.has_input(7) ? ctx.input_dtype(7) : DType::kUInt8, out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(3);
    Tensor& Y = ctx.output(0);
    Tensor acc(DType::kInt32, Y.shape());
    imatmul(A, B, read_ints(&ctx.input(2)), read_ints(&ctx.input(5)), acc.data<int32_t>());
    auto sa = read_doubles(ctx.input(1)), sb = read_doubles(ctx.input(4));
    double sy = ctx.input(6).scalar_as_double();
    int32_t yz = ctx.has_input(7) ? int32_t(ctx.input(7).scalar_as_int()) : 0;
    bool per_row = sa.size() > 1;
    std::vector<double> mult(std::max(sa.size(), sb.size()));
    for (size_t i = 0; i < mult.size(); ++i)
      mult[i] = double(float(sa[sa.size() == 1 ? 0 : i]) * float(sb[sb.size() == 1 ? 0 : i])) / sy;
    int64_t cols = dim_n(B.shape()), rows = cols ? Y.numel() / cols : 0;
    int64_t M = dim_m(A.shape());
    std::vector<double> mr;  // per-row multiplier expanded over the batch
    if (per_row) {
      mr.resize(size_t(rows));
      for (int64_t r = 0; r < rows; ++r) mr[size_t(r)] = mult[size_t(r % M)];
    }
    const std::vector<double>& mm = per_row ? mr : mult;
    if (Y.dtype() == DType::kUInt8) requant(acc.data<int32_t>(), rows, cols, per_row, mm, yz, Y.data<uint8_t>());
    else requant(acc.data<int32_t>(), rows, cols, per_row, mm, yz, Y.data<int8_t>());
    return Status::ok();
  }
};

// ---------------------------------------------------------------- conv
class IntConvBase : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    group_ = node.attrs.get_int("group", 1);
    if (group_ <= 0) return invalid_model("group=" + std::to_string(group_) + " must be positive");
    return Status::ok();
  }

 protected:
  // x_i/w_i: input indices of X and W. Returns Y's shape.
  Status conv_shape(InferContext& ctx, int xi, int wi, Shape& y) const {
    const Shape& x = ctx.input_shape(xi);
    const Shape& w = ctx.input_shape(wi);
    if (x.size() < 3) return invalid_argument("input " + std::to_string(xi) + " (x) has shape " + shape_str(x) + "; needs rank >= 3");
    if (w.size() != x.size())
      return invalid_argument("input " + std::to_string(wi) + " (w) has rank " + std::to_string(w.size()) + ", x has rank " +
                              std::to_string(x.size()));
    if (w[1] * group_ != x[1])
      return invalid_argument("input " + std::to_string(wi) + " (w) has " + std::to_string(w[1]) + " input channels, x has " +
                              std::to_string(x[1]) + " (group=" + std::to_string(group_) + ")");
    if (w[0] % group_)
      return invalid_argument("w has " + std::to_string(w[0]) + " output channels, not divisible by group=" + std::to_string(group_));
    Shape in(x.begin() + 2, x.end()), k(w.begin() + 2, w.end()), out;
    if (!sp_.kernel_shape.empty() && sp_.kernel_shape != std::vector<int64_t>(k.begin(), k.end()))
      return invalid_model("kernel_shape " + dnnl_util::ints_str(sp_.kernel_shape) + " does not match w's spatial dims " + shape_str(k));
    std::vector<int64_t> st, dl, pb, pe;
    INGOT_RETURN_IF_ERROR(sp_.resolve(in, k, st, dl, pb, pe, out, false));
    y = {x[0], w[0]};
    y.insert(y.end(), out.begin(), out.end());
    return Status::ok();
  }

  // int32 accumulators [N, M, out...] of conv(x - zx, w - zw[m]).
  void conv_acc(const Tensor& X, int32_t zx, const Tensor& W, const std::vector<int32_t>& zw, int32_t* acc) const {
    const Shape& xs = X.shape();
    const Shape& ws = W.shape();
    size_t nd = xs.size() - 2;
    Shape in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end()), out;
    std::vector<int64_t> st, dl, pb, pe;
    (void)sp_.resolve(in, k, st, dl, pb, pe, out, false);
    int64_t N = xs[0], C = xs[1], M = ws[0], Cg = C / group_, Mg = M / group_;
    int64_t kn = shape_numel(k), P = shape_numel(out), inP = shape_numel(in), Kd = Cg * kn;
    // Weights minus zero points, [M, Cg*kn].
    std::vector<int32_t> Wi(size_t(M * Kd));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < Kd; ++j) {
        int64_t i = m * Kd + j;
        int32_t v = W.dtype() == DType::kUInt8 ? int32_t(W.data<uint8_t>()[i]) : int32_t(W.data<int8_t>()[i]);
        Wi[size_t(i)] = v - zw[zw.size() == 1 ? 0 : size_t(m)];
      }
    auto is = strides_of(in);
    std::vector<int32_t> col(size_t(Kd * P));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        // im2col of (x - zx) for this image and group; padding contributes 0.
        parallel_for(Kd, P, [&](int64_t b, int64_t e) {
          std::vector<int64_t> kc(nd), oc(nd);
          for (int64_t row = b; row < e; ++row) {
            int64_t c = row / kn, r = row % kn;
            for (int d = int(nd) - 1; d >= 0; --d) kc[size_t(d)] = r % k[size_t(d)], r /= k[size_t(d)];
            int64_t xoff = (n * C + g * Cg + c) * inP;
            for (int64_t p = 0; p < P; ++p) {
              int64_t rr = p, lin = 0;
              bool inside = true;
              for (int d = int(nd) - 1; d >= 0; --d) {
                int64_t o = rr % out[size_t(d)];
                rr /= out[size_t(d)];
                int64_t ci = o * st[size_t(d)] - pb[size_t(d)] + kc[size_t(d)] * dl[size_t(d)];
                if (ci < 0 || ci >= in[size_t(d)]) inside = false;
                lin += ci * is[size_t(d)];
              }
              int32_t v = 0;
              if (inside) {
                v = X.dtype() == DType::kUInt8 ? int32_t(X.data<uint8_t>()[xoff + lin])
                                               : int32_t(X.data<int8_t>()[xoff + lin]);
                v -= zx;
              }
              col[size_t(row * P + p)] = v;
            }
          }
        });
        igemm(Mg, P, Kd, Wi.data() + g * Mg * Kd, col.data(), acc + (n * M + g * Mg) * P);
      }
  }

  Spatial sp_;
  int64_t group_ = 1;
};

class ConvIntegerKernel : public IntConvBase {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 4 || !ctx.has_input(0) || !ctx.has_input(1))
      return invalid_model("needs 2 to 4 inputs (x, w, x_zero_point, w_zero_point), got " + std::to_string(ctx.num_inputs()));
    for (int i = 0; i < 4; ++i)
      if (ctx.has_input(i) && !is_q8(ctx.input_dtype(i)))
        return unsupported("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) + "; expected int8 or uint8");
    Shape y;
    INGOT_RETURN_IF_ERROR(conv_shape(ctx, 0, 1, y));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 2, "x_zero_point", 1, false));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 3, "w_zero_point", ctx.input_shape(1)[0], true));
    ctx.set_output(0, DType::kInt32, y);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    int32_t zx = ctx.has_input(2) ? int32_t(ctx.input(2).scalar_as_int()) : 0;
    auto zw = read_ints(ctx.has_input(3) ? &ctx.input(3) : nullptr);
    conv_acc(ctx.input(0), zx, ctx.input(1), zw, ctx.output(0).data<int32_t>());
    return Status::ok();
  }
};

class QLinearConvKernel : public IntConvBase {
 public:
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() < 8 || ctx.num_inputs() > 9)
      return invalid_model("needs 8 or 9 inputs (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B), got " +
                           std::to_string(ctx.num_inputs()));
    for (int i = 0; i < 7; ++i)
      if (!ctx.has_input(i) && i != 2 && i != 5) return invalid_model("input " + std::to_string(i) + " is required");
    for (int i : {0, 2, 3, 5, 7})
      if (ctx.has_input(i) && !is_q8(ctx.input_dtype(i)))
        return unsupported("input " + std::to_string(i) + " has dtype " + dtype_name(ctx.input_dtype(i)) + "; expected int8 or uint8");
    for (int i : {1, 4, 6})
      if (!dtype_is_float(ctx.input_dtype(i)))
        return invalid_model("input " + std::to_string(i) + " (scale) has dtype " + dtype_name(ctx.input_dtype(i)));
    Shape y;
    INGOT_RETURN_IF_ERROR(conv_shape(ctx, 0, 3, y));
    int64_t M = ctx.input_shape(3)[0];
    INGOT_RETURN_IF_ERROR(check_param(ctx, 1, "x_scale", 1, false));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 2, "x_zero_point", 1, false));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 4, "w_scale", M, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 5, "w_zero_point", M, true));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 6, "y_scale", 1, false));
    INGOT_RETURN_IF_ERROR(check_param(ctx, 7, "y_zero_point", 1, false));
    if (ctx.has_input(8)) {
      if (ctx.input_dtype(8) != DType::kInt32)
        return invalid_model("input 8 (B) has dtype " + dtype_name(ctx.input_dtype(8)) + ", expected int32");
      if (ctx.input_shape(8) != Shape{M})
        return invalid_argument("input 8 (B) has shape " + shape_str(ctx.input_shape(8)) + ", expected [" + std::to_string(M) + "]");
    }
    ctx.set_output(0, ctx.has_input(7) ? ctx.input_dtype(7) : ctx.input_dtype(0), y);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    Tensor& Y = ctx.output(0);
    Tensor acc(DType::kInt32, Y.shape());
    int32_t zx = ctx.has_input(2) ? int32_t(ctx.input(2).scalar_as_int()) : 0;
    auto zw = read_ints(ctx.has_input(5) ? &ctx.input(5) : nullptr);
    conv_acc(ctx.input(0), zx, ctx.input(3), zw, acc.data<int32_t>());
    int64_t M = Y.dim(1), N = Y.dim(0), P = M ? Y.numel() / (N * M) : 0;
    double sx = ctx.input(1).scalar_as_double(), sy = ctx.input(6).scalar_as_double();
    auto sw = read_doubles(ctx.input(4));
    int32_t yz = ctx.has_input(7) ? int32_t(ctx.input(7).scalar_as_int()) : 0;
    int32_t* a = acc.data<int32_t>();
    if (ctx.has_input(8)) {
      const int32_t* b = ctx.input(8).data<int32_t>();
      for (int64_t r = 0; r < N * M; ++r)
        for (int64_t p = 0; p < P; ++p) a[r * P + p] += b[r % M];
    }
    std::vector<double> mult(size_t(N * M));
    for (int64_t r = 0; r < N * M; ++r)
      mult[size_t(r)] = double(float(sx) * float(sw[sw.size() == 1 ? 0 : size_t(r % M)])) / sy;
    if (Y.dtype() == DType::kUInt8) requant(a, N * M, P, true, mult, yz, Y.data<uint8_t>());
    else requant(a, N * M, P, true, mult, yz, Y.data<int8_t>());
    return Status::ok();
  }
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", MatMulInteger, MatMulIntegerKernel);
INGOT_REGISTER_KERNEL(cpu, "", QLinearMatMul, QLinearMatMulKernel);
INGOT_REGISTER_KERNEL(cpu, "", ConvInteger, ConvIntegerKernel);
INGOT_REGISTER_KERNEL(cpu, "", QLinearConv, QLinearConvKernel);

}  // namespace ingot
