// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over (N, C, d1..dk) inputs with
// (N, d1..dk) int32/int64 targets, optional per-class weights, ignore_index and reduction
// none/sum/mean. mean divides by the summed weights of the targets not ignored.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

template <class T> T cast_out(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return T(float(v));
}

enum class Reduction { kNone, kSum, kMean };

Status parse_common(const Node& node, Reduction& red, std::optional<int64_t>& ignore) {
  std::string r = node.attrs.get_string("reduction", "mean");
  if (r == "none") red = Reduction::kNone;
  else if (r == "sum") red = Reduction::kSum;
  else if (r == "mean") red = Reduction::kMean;
  else return invalid_model("attribute 'reduction' value '" + r + "' must be none, sum or mean");
  if (node.attrs.has("ignore_index")) ignore = node.attrs.get_int("ignore_index", 0);
  return Status::ok();
}

// Checks shapes/dtypes; returns the output shape of the loss.
Expected<Shape> check_loss_inputs(const InferContext& ctx, Reduction red, const char* what) {
  if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs '" + std::string(what) + "' and target");
  DType t = ctx.input_dtype(0);
  if (!dtype_is_float(t)) return unsupported("input dtype " + dtype_name(t) + " is not supported");
  DType tt = ctx.input_dtype(1);
  if (tt != DType::kInt32 && tt != DType::kInt64)
    return invalid_argument("target must be int32 or int64, got " + dtype_name(tt));
  const Shape& xs = ctx.input_shape(0);
  const Shape& ts = ctx.input_shape(1);
  if (xs.size() < 2) return invalid_argument("input must have rank >= 2 (N, C, ...), got rank " + std::to_string(xs.size()));
  Shape expect = xs;
  expect.erase(expect.begin() + 1);
  if (ts != expect)
    return invalid_argument("target shape " + shape_str(ts) + " does not match input shape " + shape_str(xs) +
                            " (expected " + shape_str(expect) + ")");
  if (ctx.has_input(2)) {
    if (ctx.input_dtype(2) != t)
      return invalid_argument("weight dtype " + dtype_name(ctx.input_dtype(2)) + " does not match input dtype " + dtype_name(t));
    if (ctx.input_shape(2) != Shape{xs[1]})
      return invalid_argument("weight shape " + shape_str(ctx.input_shape(2)) + " must be [" + std::to_string(xs[1]) + "]");
  }
  return red == Reduction::kNone ? ts : Shape{};
}

// logp: (N, C, D) log-probabilities (any float type, read through Get). Writes the loss.
template <class T, class Get>
Status nll_core(const Get& logp, const Tensor& target, const Tensor* weight, int64_t N, int64_t C, int64_t D,
                Reduction red, const std::optional<int64_t>& ignore, Tensor& out) {
  const int64_t M = N * D;
  std::vector<double> loss(static_cast<size_t>(M)), wsum(static_cast<size_t>(M));
  const T* w = weight ? weight->data<T>() : nullptr;
  for (int64_t i = 0; i < M; ++i) {
    const int64_t t = target.scalar_as_int(i);
    if (ignore && t == *ignore) { loss[size_t(i)] = 0; wsum[size_t(i)] = 0; continue; }
    if (t < 0 || t >= C)
      return invalid_argument("target value " + std::to_string(t) + " at index " + std::to_string(i) +
                              " is out of range for " + std::to_string(C) + " classes");
    const int64_t n = i / D, d = i % D;
    const double wt = w ? double(w[t]) : 1.0;
    loss[size_t(i)] = -double(logp((n * C + t) * D + d)) * wt;
    wsum[size_t(i)] = wt;
  }
  T* o = out.data<T>();
  if (red == Reduction::kNone) {
    for (int64_t i = 0; i < M; ++i) o[i] = cast_out<T>(loss[size_t(i)]);
    return Status::ok();
  }
  double s = 0, ws = 0;
  for (int64_t i = 0; i < M; ++i) { s += loss[size_t(i)]; ws += wsum[size_t(i)]; }
  if (red == Reduction::kMean) s = s / ws;
  o[0] = cast_out<T>(s);
  return Status::ok();
}

void dims_of(const Shape& xs, int64_t& N, int64_t& C, int64_t& D) {
  N = xs[0];
  C = xs[1];
  D = 1;
  for (size_t i = 2; i < xs.size(); ++i) D *= xs[i];
}

class NllLossKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override { return parse_common(node, red_, ignore_); }
  Status infer(InferContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(Shape out, check_loss_inputs(ctx, red_, "input"));
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t N, C, D;
    dims_of(x.shape(), N, C, D);
    Tensor& y = ctx.output(0);
    Status st;
    bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.data<T>();
      st = nll_core<T>([p](int64_t i) { return double(p[i]); }, ctx.input(1),
                       ctx.has_input(2) ? &ctx.input(2) : nullptr, N, C, D, red_, ignore_, y);
    });
    if (!ok) return unsupported("input dtype " + dtype_name(x.dtype()) + " is not supported");
    return st;
  }

 private:
  Reduction red_ = Reduction::kMean;
  std::optional<int64_t> ignore_;
};

class SceLossKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override { return parse_common(node, red_, ignore_); }
  Status infer(InferContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(Shape out, check_loss_inputs(ctx, red_, "scores"));
    ctx.set_output(0, ctx.input_dtype(0), out);
    if (ctx.has_output(1)) ctx.set_output(1, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t N, C, D;
    dims_of(x.shape(), N, C, D);
    std::vector<double> logp(static_cast<size_t>(N * C * D));
    Status st;
    bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.data<T>();
      // log_softmax over axis 1
      parallel_for(N * D, C * 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t n = i / D, d = i % D;
          const T* row = p + n * C * D + d;
          double m = -INFINITY;
          for (int64_t c = 0; c < C; ++c) m = std::max(m, double(row[c * D]));
          double s = 0;
          for (int64_t c = 0; c < C; ++c) s += std::exp(double(row[c * D]) - m);
          const double ls = std::log(s) + m;
          double* lr = logp.data() + n * C * D + d;
          for (int64_t c = 0; c < C; ++c) lr[c * D] = double(row[c * D]) - ls;
        }
      });
      if (ctx.has_output(1)) {
        T* lo = ctx.output(1).data<T>();
        for (size_t i = 0; i < logp.size(); ++i) lo[i] = cast_out<T>(logp[i]);
      }
      const double* lp = logp.data();
      st = nll_core<T>([lp](int64_t i) { return lp[i]; }, ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr,
                       N, C, D, red_, ignore_, ctx.output(0));
    });
    if (!ok) return unsupported("input dtype " + dtype_name(x.dtype()) + " is not supported");
    return st;
  }

 private:
  Reduction red_ = Reduction::kMean;
  std::optional<int64_t> ignore_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", NegativeLogLikelihoodLoss, NllLossKernel);
INGOT_REGISTER_KERNEL(cpu, "", SoftmaxCrossEntropyLoss, SceLossKernel);

}  // namespace ingot
