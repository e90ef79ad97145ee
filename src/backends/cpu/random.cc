// Random ops: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli and
// Multinomial. Their outputs are not a function of their inputs (deterministic() is false), so
// neither shape inference nor constant folding computes them: each run draws anew.
//
// Each node has its own generator (a 64-bit Mersenne twister). With the 'seed' attribute it is
// seeded from it when the engine is loaded and its sequence continues from run to run, as ONNX
// Runtime's does: an engine loaded afresh repeats the same runs. Without a seed it is seeded
// from std::random_device. Contexts running at once draw from it in turn (a mutex), so the
// draws are whole and never shared. The values cannot match another runtime's bit for bit (the
// ONNX spec fixes no generator), only in distribution.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_util.h"
#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/tensor_util.h"
#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

class NodeGenerator {
 public:
  void seed_from(const Node& node) {
    if (node.attrs.has("seed")) {
      // The spec's seed is a float; its bits seed the generator (any two seeds differ).
      const float s = node.attrs.get_float("seed", 0.f);
      uint32_t bits = 0;
      std::memcpy(&bits, &s, sizeof bits);
      rng_.seed(bits);
    } else {
      std::random_device rd;
      rng_.seed((uint64_t(rd()) << 32) | rd());
    }
  }
  // Calls f(generator) while no other run draws.
  template <class F>
  void draw(F&& f) const {
    std::lock_guard<std::mutex> lock(mu_);
    f(rng_);
  }

 private:
  mutable std::mutex mu_;
  mutable std::mt19937_64 rng_;
};

// The 'dtype' attribute (ONNX's TensorProto enum, which DType follows): `fallback` when absent.
Expected<DType> dtype_attr(const Node& node, DType fallback) {
  if (!node.attrs.has("dtype")) return fallback;
  const int64_t v = node.attrs.get_int("dtype", 0);
  const DType t = DType(v);
  if (v <= 0 || v > 16 || !dtype_is_supported(t))
    return invalid_model("attribute 'dtype' = " + std::to_string(v) + " is not a data type ingot supports");
  return t;
}

Status require_float(DType t, const std::string& what) {
  if (dtype_is_float(t)) return Status::ok();
  return invalid_model(what + " is " + dtype_name(t) + "; expected float16, bfloat16, float32 or float64");
}

// Writes n values from `next()` (doubles) into t, converted to its float dtype.
template <class F>
void fill_float(Tensor& t, F&& next) {
  dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = ew::convert<T>(next());
  });
}

// RandomNormal / RandomUniform (shape from the 'shape' attribute) and their *Like forms (the
// input's shape, and its dtype unless 'dtype' says otherwise).
template <bool kNormal, bool kLike>
class RandomKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    a_ = node.attrs.get_float(kNormal ? "mean" : "low", 0.f);
    b_ = node.attrs.get_float(kNormal ? "scale" : "high", 1.f);
    if (!std::isfinite(a_) || !std::isfinite(b_) || (kNormal ? b_ < 0 : b_ < a_))
      return invalid_model(kNormal ? "attributes 'mean' and 'scale' must be finite, scale >= 0"
                                   : "attributes 'low' and 'high' must be finite, low <= high");
    if constexpr (!kLike) {
      if (!node.attrs.has("shape")) return invalid_model("attribute 'shape' is required");
      shape_ = node.attrs.get_ints("shape");
      for (int64_t d : shape_)
        if (d < 0) return invalid_model("attribute 'shape' has a negative dimension " + std::to_string(d));
      INGOT_ASSIGN_OR_RETURN(dtype_, dtype_attr(node, DType::kFloat32));
      INGOT_RETURN_IF_ERROR(require_float(dtype_, "attribute 'dtype'"));
    } else {
      has_dtype_ = node.attrs.has("dtype");
      INGOT_ASSIGN_OR_RETURN(dtype_, dtype_attr(node, DType::kFloat32));
      if (has_dtype_) INGOT_RETURN_IF_ERROR(require_float(dtype_, "attribute 'dtype'"));
    }
    gen_.seed_from(node);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if constexpr (kLike) {
      if (ctx.num_inputs() != 1 || !ctx.has_input(0)) return invalid_model("needs 1 input (input)");
      const DType t = has_dtype_ ? dtype_ : ctx.input_dtype(0);
      INGOT_RETURN_IF_ERROR(require_float(t, "the output's dtype (the input's, no 'dtype' attribute)"));
      ctx.set_output(0, t, ctx.input_shape(0));
    } else {
      if (ctx.num_inputs() != 0) return invalid_model("takes no inputs");
      INGOT_RETURN_IF_ERROR(tensor_ops::check_output_size(Shape(shape_), 8));
      ctx.set_output(0, dtype_, Shape(shape_));
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    Tensor& y = ctx.output(0);
    gen_.draw([&](std::mt19937_64& rng) {
      if constexpr (kNormal) {
        std::normal_distribution<double> d(a_, b_);
        fill_float(y, [&] { return d(rng); });
      } else {
        std::uniform_real_distribution<double> d(a_, b_);
        fill_float(y, [&] { return d(rng); });
      }
    });
    return Status::ok();
  }
  bool reads_input_data(int) const override { return false; }
  bool deterministic() const override { return false; }
  bool writes_every_output_element() const override { return true; }

 private:
  float a_ = 0, b_ = 1;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::kFloat32;
  bool has_dtype_ = false;
  NodeGenerator gen_;
};

// Bernoulli: 1 where a uniform draw in [0, 1) falls below the input probability, else 0, in
// 'dtype' (default the input's; bool and numeric types). A probability outside [0, 1] or NaN is
// an error naming the first one.
class BernoulliKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    has_dtype_ = node.attrs.has("dtype");
    INGOT_ASSIGN_OR_RETURN(dtype_, dtype_attr(node, DType::kFloat32));
    gen_.seed_from(node);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0)) return invalid_model("needs 1 input (input)");
    INGOT_RETURN_IF_ERROR(require_float(ctx.input_dtype(0), "input 0 (input)"));
    ctx.set_output(0, has_dtype_ ? dtype_ : ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const std::vector<double> p = cpu::to_doubles(ctx.input(0));
    Tensor& y = ctx.output(0);
    for (size_t i = 0; i < p.size(); ++i)
      if (!(p[i] >= 0 && p[i] <= 1))
        return invalid_argument("input 0 (input) holds " + std::to_string(p[i]) + " at " + std::to_string(i) +
                                "; probabilities must be in [0, 1]");
    std::vector<uint8_t> bits(p.size());
    gen_.draw([&](std::mt19937_64& rng) {
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (size_t i = 0; i < p.size(); ++i) bits[i] = u(rng) < p[i];
    });
    dispatch_all(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) o[i] = ew::convert<T>(bits[size_t(i)] != 0);
    });
    return Status::ok();
  }
  bool deterministic() const override { return false; }
  bool writes_every_output_element() const override { return true; }

 private:
  DType dtype_ = DType::kFloat32;
  bool has_dtype_ = false;
  NodeGenerator gen_;
};

// Multinomial: input [batch, classes] of unnormalised log-probabilities; output [batch,
// sample_size] of class indices drawn with probabilities softmax(row), int32 (default) or int64.
class MultinomialKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(dtype_, dtype_attr(node, DType::kInt32));
    if (dtype_ != DType::kInt32 && dtype_ != DType::kInt64)
      return invalid_model("attribute 'dtype' is " + dtype_name(dtype_) + "; expected int32 or int64");
    samples_ = node.attrs.get_int("sample_size", 1);
    if (samples_ < 0) return invalid_model("attribute 'sample_size' is " + std::to_string(samples_) + "; expected >= 0");
    gen_.seed_from(node);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0)) return invalid_model("needs 1 input (input)");
    INGOT_RETURN_IF_ERROR(require_float(ctx.input_dtype(0), "input 0 (input)"));
    const Shape& s = ctx.input_shape(0);
    if (s.size() != 2) return invalid_argument("input 0 (input) has shape " + shape_str(s) + "; expected [batch_size, class_size]");
    if (s[1] == 0 && samples_ > 0) return invalid_argument("input 0 (input) has no classes to draw from");
    INGOT_RETURN_IF_ERROR(tensor_ops::check_output_size({s[0], samples_}, 8));
    ctx.set_output(0, dtype_, {s[0], samples_});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<double> logp = cpu::to_doubles(x);
    Tensor& y = ctx.output(0);
    const int64_t rows = x.dim(0), classes = x.dim(1);
    std::vector<double> cdf(static_cast<size_t>(classes));
    std::vector<int64_t> drawn(static_cast<size_t>(rows * samples_));
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, logp[size_t(r * classes + c)]);
      if (!std::isfinite(mx))
        return invalid_argument("input 0 (input) row " + std::to_string(r) + " has no finite log-probability to draw from");
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) {
        const double v = logp[size_t(r * classes + c)];
        if (std::isnan(v)) return invalid_argument("input 0 (input) row " + std::to_string(r) + " holds NaN");
        cdf[size_t(c)] = total += std::exp(v - mx);
      }
      gen_.draw([&](std::mt19937_64& rng) {
        std::uniform_real_distribution<double> u(0.0, total);
        for (int64_t s = 0; s < samples_; ++s) {
          const double t = u(rng);
          // The first class whose cumulative weight exceeds t (a class of weight 0 is never drawn).
          int64_t c = int64_t(std::upper_bound(cdf.begin(), cdf.end(), t) - cdf.begin());
          drawn[size_t(r * samples_ + s)] = std::min(c, classes - 1);
        }
      });
    }
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (dtype_ == DType::kInt32) y.data<int32_t>()[i] = int32_t(drawn[size_t(i)]);
      else y.data<int64_t>()[i] = drawn[size_t(i)];
    }
    return Status::ok();
  }
  bool deterministic() const override { return false; }
  bool writes_every_output_element() const override { return true; }

 private:
  DType dtype_ = DType::kInt32;
  int64_t samples_ = 1;
  NodeGenerator gen_;
};

using RandomNormalKernel = RandomKernel<true, false>;
using RandomUniformKernel = RandomKernel<false, false>;
using RandomNormalLikeKernel = RandomKernel<true, true>;
using RandomUniformLikeKernel = RandomKernel<false, true>;

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", RandomNormal, RandomNormalKernel);
INGOT_REGISTER_KERNEL(cpu, "", RandomUniform, RandomUniformKernel);
INGOT_REGISTER_KERNEL(cpu, "", RandomNormalLike, RandomNormalLikeKernel);
INGOT_REGISTER_KERNEL(cpu, "", RandomUniformLike, RandomUniformLikeKernel);
INGOT_REGISTER_KERNEL(cpu, "", Bernoulli, BernoulliKernel);
INGOT_REGISTER_KERNEL(cpu, "", Multinomial, MultinomialKernel);

}  // namespace ingot
