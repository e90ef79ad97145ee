// Window generators (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix. Their
// output shapes come from scalar inputs; unknown at build time, they are allocated at run time.
#include <cmath>

#include "ir/dispatch.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

Status check_output_datatype(int64_t dt) {
  DType t = DType(dt);
  if (dt <= 0 || dt > 16 || !(dtype_is_float(t) || dtype_is_integer(t)))
    return invalid_model("attribute 'output_datatype' value " + std::to_string(dt) + " is not a supported numeric type");
  return Status::ok();
}

// Reads a scalar integer input (int32/int64, one element).
Expected<int64_t> scalar_int(const Tensor& t, const char* name) {
  if (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)
    return invalid_argument(std::string("input '") + name + "' must be int32 or int64, got " + dtype_name(t.dtype()));
  if (t.numel() != 1)
    return invalid_argument(std::string("input '") + name + "' must hold one value, got shape " + shape_str(t.shape()));
  return t.scalar_as_int();
}

Expected<double> scalar_float(const Tensor& t, const char* name) {
  if (!dtype_is_float(t.dtype()) && !dtype_is_integer(t.dtype()))
    return invalid_argument(std::string("input '") + name + "' must be numeric, got " + dtype_name(t.dtype()));
  if (t.numel() != 1)
    return invalid_argument(std::string("input '") + name + "' must hold one value, got shape " + shape_str(t.shape()));
  return t.scalar_as_double();
}

// Writes doubles into a tensor of any numeric dtype.
void store_doubles(const std::vector<double>& v, Tensor& out) {
  dispatch_numeric(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) o[i] = T(float(v[i]));
      else o[i] = T(v[i]);
    }
  });
}

enum class WKind { kHann, kHamming, kBlackman };

template <WKind K>
class WindowKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    out_dt_ = node.attrs.get_int("output_datatype", 1);
    periodic_ = node.attrs.get_int("periodic", 1) != 0;
    return check_output_datatype(out_dt_);
  }
  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input 'size'");
    DType st = ctx.input_dtype(0);
    if (st != DType::kInt32 && st != DType::kInt64)
      return invalid_argument("input 'size' must be int32 or int64, got " + dtype_name(st));
    if (const Tensor* s = ctx.input_value(0)) {
      INGOT_ASSIGN_OR_RETURN(int64_t n, scalar_int(*s, "size"));
      if (n < 0) return invalid_argument("input 'size' value " + std::to_string(n) + " must be >= 0");
      ctx.set_output(0, DType(out_dt_), {n});
    } else {
      ctx.set_output_dynamic(0, DType(out_dt_));
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(int64_t n, scalar_int(ctx.input(0), "size"));
    if (n < 0) return invalid_argument("input 'size' value " + std::to_string(n) + " must be >= 0");
    Tensor& y = ctx.allocate_output(0, DType(out_dt_), {n});
    std::vector<double> v(static_cast<size_t>(n));
    const double N = periodic_ ? double(n) : double(n - 1);
    for (int64_t i = 0; i < n; ++i) {
      const double a = N > 0 ? 2.0 * M_PI * double(i) / N : 0.0;
      double w;
      if (K == WKind::kHann) w = 0.5 - 0.5 * std::cos(a);
      else if (K == WKind::kHamming) w = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
      else w = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
      v[size_t(i)] = w;
    }
    store_doubles(v, y);
    return Status::ok();
  }

 private:
  int64_t out_dt_ = 1;
  bool periodic_ = true;
};

using HannWindowKernel = WindowKernel<WKind::kHann>;
using HammingWindowKernel = WindowKernel<WKind::kHamming>;
using BlackmanWindowKernel = WindowKernel<WKind::kBlackman>;

// MelWeightMatrix, following the ONNX reference: num_mel_bins + 2 points evenly spaced on the
// mel scale, mapped to spectrogram bins, and triangles with peak 1 between them.
class MelWeightMatrixKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    out_dt_ = node.attrs.get_int("output_datatype", 1);
    return check_output_datatype(out_dt_);
  }
  Status infer(InferContext& ctx) const override {
    for (int i = 0; i < 5; ++i)
      if (!ctx.has_input(i)) return invalid_model("needs 5 inputs");
    const Tensor* nm = ctx.input_value(0);
    const Tensor* dl = ctx.input_value(1);
    if (nm && dl) {
      INGOT_ASSIGN_OR_RETURN(int64_t mel, scalar_int(*nm, "num_mel_bins"));
      INGOT_ASSIGN_OR_RETURN(int64_t len, scalar_int(*dl, "dft_length"));
      if (mel <= 0) return invalid_argument("input 'num_mel_bins' value " + std::to_string(mel) + " must be > 0");
      if (len <= 0) return invalid_argument("input 'dft_length' value " + std::to_string(len) + " must be > 0");
      ctx.set_output(0, DType(out_dt_), {len / 2 + 1, mel});
    } else {
      ctx.set_output_dynamic(0, DType(out_dt_));
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    INGOT_ASSIGN_OR_RETURN(int64_t mel, scalar_int(ctx.input(0), "num_mel_bins"));
    INGOT_ASSIGN_OR_RETURN(int64_t len, scalar_int(ctx.input(1), "dft_length"));
    INGOT_ASSIGN_OR_RETURN(int64_t rate, scalar_int(ctx.input(2), "sample_rate"));
    INGOT_ASSIGN_OR_RETURN(double lo, scalar_float(ctx.input(3), "lower_edge_hertz"));
    INGOT_ASSIGN_OR_RETURN(double hi, scalar_float(ctx.input(4), "upper_edge_hertz"));
    if (mel <= 0) return invalid_argument("input 'num_mel_bins' value " + std::to_string(mel) + " must be > 0");
    if (len <= 0) return invalid_argument("input 'dft_length' value " + std::to_string(len) + " must be > 0");
    if (rate <= 0) return invalid_argument("input 'sample_rate' value " + std::to_string(rate) + " must be > 0");
    if (lo < 0 || hi < lo)
      return invalid_argument("edge frequencies must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz");
    const int64_t bins = len / 2 + 1;
    const double lmel = 2595.0 * std::log10(1.0 + lo / 700.0);
    const double hmel = 2595.0 * std::log10(1.0 + hi / 700.0);
    const double step = (hmel - lmel) / double(mel + 2);
    std::vector<int64_t> fb(static_cast<size_t>(mel + 2));
    for (int64_t i = 0; i < mel + 2; ++i) {
      double f = 700.0 * (std::pow(10.0, (double(i) * step + lmel) / 2595.0) - 1.0);
      fb[size_t(i)] = int64_t(std::floor(double(len + 1) * f / double(rate)));
    }
    std::vector<double> out(static_cast<size_t>(bins * mel), 0.0);
    auto put = [&](int64_t j, int64_t i, double v) {
      if (j >= 0 && j < bins) out[size_t(j * mel + i)] = v;
    };
    for (int64_t i = 0; i < mel; ++i) {
      const int64_t l = fb[size_t(i)], c = fb[size_t(i + 1)], h = fb[size_t(i + 2)];
      if (c - l == 0) put(c, i, 1.0);
      else for (int64_t j = l; j <= c; ++j) put(j, i, double(j - l) / double(c - l));
      if (h - c > 0)
        for (int64_t j = c; j < h; ++j) put(j, i, double(h - j) / double(h - c));
    }
    Tensor& y = ctx.allocate_output(0, DType(out_dt_), {bins, mel});
    store_doubles(out, y);
    return Status::ok();
  }

 private:
  int64_t out_dt_ = 1;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", HannWindow, HannWindowKernel);
INGOT_REGISTER_KERNEL(cpu, "", HammingWindow, HammingWindowKernel);
INGOT_REGISTER_KERNEL(cpu, "", BlackmanWindow, BlackmanWindowKernel);
INGOT_REGISTER_KERNEL(cpu, "", MelWeightMatrix, MelWeightMatrixKernel);

}  // namespace ingot
