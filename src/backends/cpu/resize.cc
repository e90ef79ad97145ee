// Resize (opset 10, 11-17, 18+) and Upsample (opset 1-10).
//
// Every mode is a separable filter: for each dimension and output index, a few input indices
// with weights (nearest: 1 tap; linear: 2; cubic: 4; antialiased: as many as the footprint
// needs). Nearest is done as one N-D gather in the element type; linear/cubic apply the 1-D
// filters one dimension after another in float (double for float64). tf_crop_and_resize
// points that fall outside the input take extrapolation_value.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::to_doubles;

enum class RMode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn, kTfCrop };
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kLegacy };
enum class Aspect { kStretch, kNotLarger, kNotSmaller };
enum class Flavor { kResize11, kResize10, kUpsample };

struct Plan {
  Shape out;
  std::vector<double> scales;           // per dim, used by the coordinate transform
  std::vector<double> roi_start, roi_end;  // per dim (tf_crop_and_resize)
};

struct DimFilter {
  int64_t in = 0, out = 0, taps = 1;
  std::vector<int64_t> idx;    // out * taps, clamped into [0, in)
  std::vector<double> w;       // out * taps
  std::vector<uint8_t> outside;  // out: extrapolate
  bool any_outside = false;
  bool identity = false;
};

double cubic_w(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(Flavor f = Flavor::kResize11) : flavor_(f) {}

  Status init(const Node& node, int opset) override {
    opset_ = opset;
    const Attributes& a = node.attrs;
    std::string mode = a.get_string("mode", "nearest");
    if (mode == "nearest") mode_ = RMode::kNearest;
    else if (mode == "linear" || (flavor_ == Flavor::kUpsample && mode == "bilinear")) mode_ = RMode::kLinear;
    else if (mode == "cubic" && flavor_ == Flavor::kResize11) mode_ = RMode::kCubic;
    else return invalid_model("attribute mode is '" + mode + "'; expected nearest, linear" +
                              (flavor_ == Flavor::kResize11 ? " or cubic" : ""));
    if (flavor_ != Flavor::kResize11) {
      coord_ = Coord::kAsymmetric;
      nearest_ = Nearest::kLegacy;
      if (flavor_ == Flavor::kUpsample && opset < 9) {
        if (opset < 7) {
          up_hw_ = {a.get_float("height_scale", 1.0f), a.get_float("width_scale", 1.0f)};
        } else {
          if (!a.has("scales")) return invalid_model("attribute scales is required (Upsample opset 7-8)");
          for (float f : a.get_floats("scales")) up_scales_.push_back(double(f));
        }
      }
      return Status::ok();
    }
    std::string ctm = a.get_string("coordinate_transformation_mode", "half_pixel");
    if (ctm == "half_pixel") coord_ = Coord::kHalfPixel;
    else if (ctm == "half_pixel_symmetric") coord_ = Coord::kHalfPixelSymmetric;
    else if (ctm == "pytorch_half_pixel") coord_ = Coord::kPytorchHalfPixel;
    else if (ctm == "align_corners") coord_ = Coord::kAlignCorners;
    else if (ctm == "asymmetric") coord_ = Coord::kAsymmetric;
    else if (ctm == "tf_half_pixel_for_nn") coord_ = Coord::kTfHalfPixelForNn;
    else if (ctm == "tf_crop_and_resize") coord_ = Coord::kTfCrop;
    else return invalid_model("attribute coordinate_transformation_mode is '" + ctm + "'; not a known mode");
    std::string nm = a.get_string("nearest_mode", "round_prefer_floor");
    if (nm == "round_prefer_floor") nearest_ = Nearest::kRoundPreferFloor;
    else if (nm == "round_prefer_ceil") nearest_ = Nearest::kRoundPreferCeil;
    else if (nm == "floor") nearest_ = Nearest::kFloor;
    else if (nm == "ceil") nearest_ = Nearest::kCeil;
    else return invalid_model("attribute nearest_mode is '" + nm + "'; expected round_prefer_floor, round_prefer_ceil, floor or ceil");
    cubic_a_ = double(a.get_float("cubic_coeff_a", -0.75f));
    exclude_outside_ = a.get_int("exclude_outside", 0) != 0;
    extrapolation_ = double(a.get_float("extrapolation_value", 0.0f));
    if (opset >= 18) {
      antialias_ = a.get_int("antialias", 0) != 0;
      axes_ = a.get_ints("axes");
      std::string kp = a.get_string("keep_aspect_ratio_policy", "stretch");
      if (kp == "stretch") aspect_ = Aspect::kStretch;
      else if (kp == "not_larger") aspect_ = Aspect::kNotLarger;
      else if (kp == "not_smaller") aspect_ = Aspect::kNotSmaller;
      else return invalid_model("attribute keep_aspect_ratio_policy is '" + kp + "'; expected stretch, not_larger or not_smaller");
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input X");
    DType dt = ctx.input_dtype(0);
    if (mode_ == RMode::kNearest ? !dtype_is_supported(dt) : !(dtype_is_float(dt) || dtype_is_integer(dt))) {
      return invalid_argument("input 0 (X) has dtype " + dtype_name(dt) + ", which this mode cannot interpolate");
    }
    const Tensor *roi = nullptr, *scales = nullptr, *sizes = nullptr;
    int si = -1, zi = -1, ri = -1;
    inputs_of(&ri, &si, &zi);
    for (int i : {ri, si, zi}) {
      if (i >= 0 && ctx.has_input(i) && !ctx.input_value(i)) {
        // A ROI of unknown contents does not change the shape.
        if (i == ri) continue;
        ctx.set_output_dynamic(0, dt);
        return Status::ok();
      }
    }
    if (si >= 0) scales = ctx.input_value(si);
    if (zi >= 0) sizes = ctx.input_value(zi);
    if (ri >= 0) roi = ctx.input_value(ri);
    INGOT_ASSIGN_OR_RETURN(Plan p, plan(ctx.input_shape(0), roi, scales, sizes, /*need_roi=*/false));
    ctx.set_output(0, dt, p.out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int si = -1, zi = -1, ri = -1;
    inputs_of(&ri, &si, &zi);
    auto get = [&](int i) -> const Tensor* { return i >= 0 && ctx.has_input(i) ? &ctx.input(i) : nullptr; };
    INGOT_ASSIGN_OR_RETURN(Plan p, plan(x.shape(), get(ri), get(si), get(zi), /*need_roi=*/true));
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out);
    const int rank = x.rank();
    std::vector<DimFilter> f(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) build_filter(d, x.dim(d), p, &f[size_t(d)]);
    if (y.numel() == 0) return Status::ok();
    if (x.numel() == 0) return invalid_argument("input 0 (X) is empty but the output " + shape_str(p.out) + " is not");
    if (mode_ == RMode::kNearest) {
      dispatch_all(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        nearest_gather<T>(x, y, f);
      });
      return Status::ok();
    }
    bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, double>) separable<T, double>(x, y, f);
      else separable<T, float>(x, y, f);
    });
    if (!ok) return invalid_argument("unsupported dtype " + dtype_name(x.dtype()));
    return Status::ok();
  }

 protected:
  void set_flavor(Flavor f) { flavor_ = f; }

 private:
  void inputs_of(int* roi, int* scales, int* sizes) const {
    if (flavor_ == Flavor::kResize11) { *roi = 1; *scales = 2; *sizes = 3; }
    else if (flavor_ == Flavor::kResize10 || opset_ >= 9) { *scales = 1; }
  }

  Expected<Plan> plan(const Shape& xs, const Tensor* roi, const Tensor* scales, const Tensor* sizes, bool need_roi) const {
    const int rank = int(xs.size());
    Plan p;
    p.out = xs;
    p.scales.assign(size_t(rank), 1.0);
    p.roi_start.assign(size_t(rank), 0.0);
    p.roi_end.assign(size_t(rank), 1.0);
    if (scales && scales->numel() == 0) scales = nullptr;
    if (sizes && sizes->numel() == 0) sizes = nullptr;
    // Which dims the scales/sizes values refer to.
    std::vector<int> axes;
    if (axes_.empty()) {
      for (int i = 0; i < rank; ++i) axes.push_back(i);
    } else {
      std::vector<bool> seen(static_cast<size_t>(rank), false);
      for (int64_t a : axes_) {
        INGOT_ASSIGN_OR_RETURN(int ax, normalize_axis(a, rank, "axes"));
        if (seen[size_t(ax)]) return invalid_model("attribute axes repeats axis " + std::to_string(a));
        seen[size_t(ax)] = true;
        axes.push_back(ax);
      }
    }
    const size_t na = axes.size();
    std::vector<double> sv;
    if (flavor_ == Flavor::kUpsample && opset_ < 9) {
      if (opset_ < 7) {
        if (rank != 4) return invalid_argument("input 0 (X) has shape " + shape_str(xs) + "; Upsample opset < 7 needs rank 4");
        sv = {1.0, 1.0, up_hw_[0], up_hw_[1]};
      } else {
        sv = up_scales_;
      }
    } else if (flavor_ != Flavor::kResize11) {
      if (!scales) return invalid_argument("input 1 (scales) is missing or empty");
      sv = to_doubles(*scales);
    } else {
      if (scales && sizes) return invalid_argument("inputs 2 (scales) and 3 (sizes) are both given; expected only one");
      if (!scales && !sizes) return invalid_argument("one of inputs 2 (scales) and 3 (sizes) must be given and non-empty");
      if (scales) sv = to_doubles(*scales);
    }
    if (!sizes) {
      if (sv.size() != na) {
        return invalid_argument("scales has " + std::to_string(sv.size()) + " values, expected " + std::to_string(na) +
                                (axes_.empty() ? " (the rank of X)" : " (one per axis in axes)"));
      }
      for (size_t i = 0; i < na; ++i) {
        if (!(sv[i] > 0) || !std::isfinite(sv[i])) {
          return invalid_argument("scales value " + std::to_string(sv[i]) + " at " + std::to_string(i) + " must be > 0");
        }
        int d = axes[i];
        p.scales[size_t(d)] = sv[i];
        double o = std::floor(double(xs[size_t(d)]) * sv[i]);
        if (o > 1e15) return invalid_argument("scales value " + std::to_string(sv[i]) + " makes the output too large");
        p.out[size_t(d)] = int64_t(o);
      }
    } else {
      if (!dtype_is_integer(sizes->dtype()) || sizes->numel() != int64_t(na)) {
        return invalid_argument("input 3 (sizes) has shape " + shape_str(sizes->shape()) + " and dtype " +
                                dtype_name(sizes->dtype()) + ", expected " + std::to_string(na) + " int64 values");
      }
      std::vector<int64_t> zv = sizes->to_int_vector();
      for (size_t i = 0; i < na; ++i) {
        if (zv[i] < 0) return invalid_argument("input 3 (sizes) has a negative value " + std::to_string(zv[i]));
        if (xs[size_t(axes[i])] == 0 && zv[i] != 0) return invalid_argument("cannot resize an empty dim to a non-empty one");
      }
      if (aspect_ == Aspect::kStretch) {
        for (size_t i = 0; i < na; ++i) {
          int d = axes[i];
          p.out[size_t(d)] = zv[i];
          p.scales[size_t(d)] = xs[size_t(d)] ? double(zv[i]) / double(xs[size_t(d)]) : 1.0;
        }
      } else {
        double s = aspect_ == Aspect::kNotLarger ? std::numeric_limits<double>::infinity() : 0.0;
        for (size_t i = 0; i < na; ++i) {
          int d = axes[i];
          if (!xs[size_t(d)]) continue;
          double r = double(zv[i]) / double(xs[size_t(d)]);
          s = aspect_ == Aspect::kNotLarger ? std::min(s, r) : std::max(s, r);
        }
        if (!std::isfinite(s) || s <= 0) s = 1.0;
        for (size_t i = 0; i < na; ++i) {
          int d = axes[i];
          p.scales[size_t(d)] = s;
          p.out[size_t(d)] = int64_t(std::round(s * double(xs[size_t(d)])));
        }
      }
    }
    if (need_roi && coord_ == Coord::kTfCrop && roi && roi->numel() > 0) {
      std::vector<double> rv = to_doubles(*roi);
      if (rv.size() != 2 * na) {
        return invalid_argument("input 1 (roi) has " + std::to_string(rv.size()) + " values, expected " +
                                std::to_string(2 * na) + " (starts then ends, one per resized axis)");
      }
      for (size_t i = 0; i < na; ++i) {
        p.roi_start[size_t(axes[i])] = rv[i];
        p.roi_end[size_t(axes[i])] = rv[i + na];
      }
    }
    return p;
  }

  // Input coordinate of output index x along dim d.
  double source_coord(int64_t x, int64_t in, int64_t out, double scale, double rs, double re) const {
    double xf = double(x);
    const double outf = scale * double(in);
    (void)out;
    switch (coord_) {
      case Coord::kHalfPixel: return (xf + 0.5) / scale - 0.5;
      case Coord::kHalfPixelSymmetric: {
        double adj = double(out) / (scale * double(in));
        double center = double(in) / 2;
        return center * (1 - adj) + (xf + 0.5) / scale - 0.5;
      }
      case Coord::kPytorchHalfPixel: return outf > 1 ? (xf + 0.5) / scale - 0.5 : 0.0;
      // As ONNX's reference: the resized length is scale * in, not rounded (they differ
      // when scales are given and do not divide evenly).
      case Coord::kAlignCorners: return outf != 1 ? xf * double(in - 1) / (outf - 1) : 0.0;
      case Coord::kAsymmetric: return xf / scale;
      case Coord::kTfHalfPixelForNn: return (xf + 0.5) / scale;
      case Coord::kTfCrop:
        return outf != 1 ? rs * double(in - 1) + xf * (re - rs) * double(in - 1) / (outf - 1)
                       : 0.5 * (rs + re) * double(in - 1);
    }
    return xf;
  }

  void build_filter(int d, int64_t in, const Plan& p, DimFilter* f) const {
    const int64_t out = p.out[size_t(d)];
    const double scale = p.scales[size_t(d)];
    f->in = in;
    f->out = out;
    f->outside.assign(size_t(out), 0);
    if (mode_ == RMode::kNearest) {
      f->taps = 1;
    } else {
      double s = antialias_ ? std::min(scale, 1.0) : 1.0;
      int64_t start = mode_ == RMode::kLinear ? int64_t(std::floor(-1.0 / s)) + 1 : int64_t(std::floor(-2.0 / s)) + 1;
      f->taps = 2 - 2 * start;
    }
    const int64_t taps = f->taps;
    f->idx.assign(size_t(out * taps), 0);
    f->w.assign(size_t(out * taps), 0.0);
    bool identity = in == out && coord_ != Coord::kTfCrop;
    for (int64_t x = 0; x < out; ++x) {
      double xo = source_coord(x, in, out, scale, p.roi_start[size_t(d)], p.roi_end[size_t(d)]);
      if (coord_ == Coord::kTfCrop && (xo < 0 || xo > double(in - 1))) {
        f->outside[size_t(x)] = 1;
        f->any_outside = true;
        identity = false;
        continue;
      }
      if (mode_ == RMode::kNearest) {
        double r;
        switch (nearest_) {
          case Nearest::kRoundPreferFloor: r = std::ceil(xo - 0.5); break;
          case Nearest::kRoundPreferCeil: r = std::floor(xo + 0.5); break;
          case Nearest::kFloor: r = std::floor(xo); break;
          case Nearest::kCeil: r = std::ceil(xo); break;
          default: r = scale < 1 ? std::ceil(xo) : std::floor(xo); break;
        }
        int64_t i = std::clamp<int64_t>(int64_t(std::max(std::min(r, 9e15), -9e15)), 0, in - 1);
        f->idx[size_t(x)] = i;
        f->w[size_t(x)] = 1.0;
        if (i != x) identity = false;
        continue;
      }
      // Taps sit at base + k, base = ceil(xo) - 1 so that ratio = xo - base is in (0, 1].
      double base_f = std::ceil(xo) - 1;
      double ratio = xo - base_f;
      int64_t base = int64_t(base_f);
      double s = antialias_ ? std::min(scale, 1.0) : 1.0;
      int64_t start = 1 - taps / 2;
      double sum = 0;
      for (int64_t k = 0; k < taps; ++k) {
        double arg = (double(start + k) - ratio) * s;
        double w = mode_ == RMode::kLinear ? std::max(0.0, 1.0 - std::fabs(arg)) : cubic_w(arg, cubic_a_);
        int64_t src = base + start + k;
        if (exclude_outside_ && (src < 0 || src >= in)) w = 0;
        f->idx[size_t(x * taps + k)] = std::clamp<int64_t>(src, 0, in - 1);
        f->w[size_t(x * taps + k)] = w;
        sum += w;
      }
      bool renorm = antialias_ || exclude_outside_;
      for (int64_t k = 0; k < taps; ++k) {
        double& w = f->w[size_t(x * taps + k)];
        if (renorm && sum != 0) w /= sum;
        if (w != 0 && !(f->idx[size_t(x * taps + k)] == x && std::fabs(w - 1.0) < 1e-12)) identity = false;
      }
    }
    f->identity = identity;
  }

  template <class T>
  void nearest_gather(const Tensor& x, Tensor& y, const std::vector<DimFilter>& f) const {
    const int rank = x.rank();
    const T* X = x.data<T>();
    T* Y = y.data<T>();
    const T extrap = T(extrapolation_);
    if (rank == 0) { Y[0] = X[0]; return; }
    std::vector<int64_t> in_str = strides_of(x.shape());
    const DimFilter& last = f[size_t(rank - 1)];
    const int64_t wo = last.out;
    const int64_t rows = y.numel() / wo;
    parallel_for(rows, wo * 2, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
      int64_t r = b;
      for (int d = rank - 2; d >= 0; --d) { idx[size_t(d)] = r % f[size_t(d)].out; r /= f[size_t(d)].out; }
      for (int64_t row = b; row < e; ++row) {
        int64_t off = 0;
        bool outside = false;
        for (int d = 0; d < rank - 1; ++d) {
          const DimFilter& fd = f[size_t(d)];
          off += fd.idx[size_t(idx[size_t(d)])] * in_str[size_t(d)];
          outside = outside || fd.outside[size_t(idx[size_t(d)])];
        }
        T* yr = Y + row * wo;
        if (outside) {
          for (int64_t j = 0; j < wo; ++j) yr[j] = extrap;
        } else if (last.any_outside) {
          for (int64_t j = 0; j < wo; ++j) yr[j] = last.outside[size_t(j)] ? extrap : X[off + last.idx[size_t(j)]];
        } else {
          const T* xr = X + off;
          const int64_t* li = last.idx.data();
          for (int64_t j = 0; j < wo; ++j) yr[j] = xr[li[j]];
        }
        for (int d = rank - 2; d >= 0; --d) {
          if (++idx[size_t(d)] < f[size_t(d)].out) break;
          idx[size_t(d)] = 0;
        }
      }
    });
  }

  template <class T, class A>
  void separable(const Tensor& x, Tensor& y, const std::vector<DimFilter>& f) const {
    const int rank = x.rank();
    // Dims to filter, narrowing ones first to keep the intermediate tensors small.
    std::vector<int> order;
    for (int d = 0; d < rank; ++d) if (!f[size_t(d)].identity) order.push_back(d);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return double(f[size_t(a)].out) / double(f[size_t(a)].in) < double(f[size_t(b)].out) / double(f[size_t(b)].in);
    });
    Shape cur = x.shape();
    std::vector<A> conv, cur_buf;
    const A* src;
    if constexpr (std::is_same_v<T, A>) {
      src = x.data<T>();
    } else {
      conv.resize(size_t(x.numel()));
      for (int64_t i = 0; i < x.numel(); ++i) conv[size_t(i)] = A(x.data<T>()[i]);
      src = conv.data();
    }
    for (size_t oi = 0; oi < order.size(); ++oi) {
      int d = order[oi];
      const DimFilter& fd = f[size_t(d)];
      int64_t outer = 1, inner = 1;
      for (int k = 0; k < d; ++k) outer *= cur[size_t(k)];
      for (int k = d + 1; k < rank; ++k) inner *= cur[size_t(k)];
      Shape next = cur;
      next[size_t(d)] = fd.out;
      std::vector<A> tmp(static_cast<size_t>(shape_numel(next)));
      apply_dim(src, tmp.data(), outer, fd.in, inner, fd);
      cur_buf.swap(tmp);
      src = cur_buf.data();
      cur = next;
    }
    // src now holds the filtered values with shape y.shape(); apply extrapolation and store.
    const int64_t n = y.numel();
    T* Y = y.data<T>();
    for (int64_t i = 0; i < n; ++i) Y[i] = cast_out<T, A>(src[i]);
    bool any_out = false;
    for (const DimFilter& fd : f) any_out = any_out || fd.any_outside;
    if (any_out) {
      const T extrap = cast_out<T, A>(A(extrapolation_));
      std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
      for (int64_t i = 0; i < n; ++i) {
        bool o = false;
        for (int d = 0; d < rank && !o; ++d) o = f[size_t(d)].outside[size_t(idx[size_t(d)])] != 0;
        if (o) Y[i] = extrap;
        for (int d = rank - 1; d >= 0; --d) {
          if (++idx[size_t(d)] < f[size_t(d)].out) break;
          idx[size_t(d)] = 0;
        }
      }
    }
  }

  template <class T, class A>
  static T cast_out(A v) {
    if constexpr (std::is_integral_v<T>) {
      double r = std::nearbyint(double(v));
      r = std::clamp(r, double(std::numeric_limits<T>::lowest()), double(std::numeric_limits<T>::max()));
      return T(r);
    } else {
      return T(v);
    }
  }

  // out[o, j, :] = sum_k w[j, k] * in[o, idx[j, k], :]
  template <class A>
  static void apply_dim(const A* in, A* out, int64_t outer, int64_t n_in, int64_t inner, const DimFilter& f) {
    const int64_t n_out = f.out, taps = f.taps;
    std::vector<A> w(f.w.begin(), f.w.end());
    parallel_for(outer * n_out, taps * inner + 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t o = r / n_out, j = r % n_out;
        const A* base = in + o * n_in * inner;
        A* dst = out + r * inner;
        const int64_t* ix = &f.idx[size_t(j * taps)];
        const A* wj = &w[size_t(j * taps)];
        if (inner == 1) {
          A acc = 0;
          for (int64_t k = 0; k < taps; ++k) acc += wj[k] * base[ix[k]];
          dst[0] = acc;
        } else {
          for (int64_t i = 0; i < inner; ++i) dst[i] = 0;
          for (int64_t k = 0; k < taps; ++k) {
            if (wj[k] == 0) continue;
            const A* s = base + ix[k] * inner;
            const A wk = wj[k];
            for (int64_t i = 0; i < inner; ++i) dst[i] += wk * s[i];
          }
        }
      }
    });
  }

  Flavor flavor_;
  int opset_ = 13;
  RMode mode_ = RMode::kNearest;
  Coord coord_ = Coord::kHalfPixel;
  Nearest nearest_ = Nearest::kRoundPreferFloor;
  Aspect aspect_ = Aspect::kStretch;
  double cubic_a_ = -0.75, extrapolation_ = 0;
  bool exclude_outside_ = false, antialias_ = false;
  std::vector<int64_t> axes_;
  std::vector<double> up_scales_, up_hw_;
};

class ResizeOpKernel : public ResizeKernel {
 public:
  Status init(const Node& node, int opset) override {
    // Resize-10 has only (X, scales), asymmetric coordinates and legacy nearest rounding.
    if (opset < 11) set_flavor(Flavor::kResize10);
    return ResizeKernel::init(node, opset);
  }
};

class UpsampleKernel : public ResizeKernel {
 public:
  UpsampleKernel() : ResizeKernel(Flavor::kUpsample) {}
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Resize, ResizeOpKernel);
INGOT_REGISTER_KERNEL(cpu, "", Upsample, UpsampleKernel);

}  // namespace ingot
