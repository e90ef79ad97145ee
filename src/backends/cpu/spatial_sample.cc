// GridSample and RoiAlign: bilinear-style sampling of [N, C, H, W] images at computed points.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::to_doubles;

// ---------------------------------------------------------------------------------------------
// GridSample (opset 16: bilinear/nearest/bicubic; opset 20 spells them linear/nearest/cubic,
// and adds volumes). X [N, C, H, W], grid [N, Ho, Wo, 2] with (x, y) in [-1, 1]; Y [N, C, Ho, Wo].
// Volumes (opset 20): X [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] with (x, y, z); Y [N, C, Do, Ho,
// Wo]; linear (trilinear) and nearest, cubic being defined for images only.

enum class GsMode { kLinear, kNearest, kCubic };
enum class GsPad { kZeros, kBorder, kReflection };

class GridSampleKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    std::string mode = node.attrs.get_string("mode", "bilinear");
    if (mode == "bilinear" || mode == "linear") mode_ = GsMode::kLinear;
    else if (mode == "nearest") mode_ = GsMode::kNearest;
    else if (mode == "bicubic" || mode == "cubic") mode_ = GsMode::kCubic;
    else return invalid_model("attribute mode is '" + mode + "'; expected bilinear, nearest or bicubic");
    std::string pad = node.attrs.get_string("padding_mode", "zeros");
    if (pad == "zeros") pad_ = GsPad::kZeros;
    else if (pad == "border") pad_ = GsPad::kBorder;
    else if (pad == "reflection") pad_ = GsPad::kReflection;
    else return invalid_model("attribute padding_mode is '" + pad + "'; expected zeros, border or reflection");
    align_ = node.attrs.get_int("align_corners", 0) != 0;
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs X and grid");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    INGOT_RETURN_IF_ERROR(check_float(ctx, 1, "grid"));
    const Shape& xs = ctx.input_shape(0);
    const Shape& gs = ctx.input_shape(1);
    if (xs.size() != 4 && xs.size() != 5) {
      return unsupported("input 0 (X) has shape " + shape_str(xs) +
                         "; ingot's GridSample takes images [N, C, H, W] and volumes [N, C, D, H, W]");
    }
    const bool volume = xs.size() == 5;
    if (volume && mode_ == GsMode::kCubic)
      return invalid_argument("mode cubic is defined for 4-D images; input 0 (X) has shape " + shape_str(xs));
    const int64_t k = volume ? 3 : 2;
    if (gs.size() != xs.size() || gs.back() != k || gs[0] != xs[0]) {
      return invalid_argument("input 1 (grid) has shape " + shape_str(gs) + ", expected [" + std::to_string(xs[0]) +
                              (volume ? ", D_out, H_out, W_out, 3]" : ", H_out, W_out, 2]"));
    }
    Shape out{xs[0], xs[1]};
    out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      dispatch_float(grid.dtype(), [&](auto gtag) {
        using G = typename decltype(gtag)::type;
        if (x.rank() == 5) run_volume<T, G>(x, grid, y);
        else run<T, G>(x, grid, y);
      });
    });
    return Status::ok();
  }

 private:
  static double reflect(double v, double lo, double hi) {
    double rng = hi - lo;
    if (rng <= 0) return lo;
    if (v < lo) {
      double dx = lo - v;
      int64_t n = int64_t(dx / rng);
      double r = dx - double(n) * rng;
      return n % 2 == 0 ? lo + r : hi - r;
    }
    if (v > hi) {
      double dx = v - hi;
      int64_t n = int64_t(dx / rng);
      double r = dx - double(n) * rng;
      return n % 2 == 0 ? hi - r : lo + r;
    }
    return v;
  }

  static void cubic_coeffs(double t, double c[4]) {
    const double A = -0.75;
    double x = t + 1;
    c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    c[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  }

  template <class T, class G>
  void run(const Tensor& xt, const Tensor& gt, Tensor& yt) const {
    using A = AccOf<T>;
    const int64_t N = xt.dim(0), C = xt.dim(1), H = xt.dim(2), W = xt.dim(3);
    const int64_t Ho = gt.dim(1), Wo = gt.dim(2);
    const T* X = xt.data<T>();
    const G* grid = gt.data<G>();
    T* Y = yt.data<T>();
    const double xmin = align_ ? 0 : -0.5, xmax = align_ ? double(W - 1) : double(W) - 0.5;
    const double ymin = align_ ? 0 : -0.5, ymax = align_ ? double(H - 1) : double(H) - 0.5;
    auto denorm = [&](double v, int64_t len) {
      return align_ ? (v + 1) / 2.0 * double(len - 1) : ((v + 1) * double(len) - 1) / 2.0;
    };
    // Pixel (r, c) of one channel image, with the padding mode applied to the integer position.
    auto pixel = [&](const T* img, int64_t r, int64_t c) -> A {
      if (pad_ == GsPad::kZeros) {
        if (r < 0 || r >= H || c < 0 || c >= W) return A(0);
      } else if (pad_ == GsPad::kBorder) {
        r = std::clamp<int64_t>(r, 0, H - 1);
        c = std::clamp<int64_t>(c, 0, W - 1);
      } else {
        c = int64_t(reflect(double(c), xmin, xmax));
        r = int64_t(reflect(double(r), ymin, ymax));
        r = std::clamp<int64_t>(r, 0, H - 1);
        c = std::clamp<int64_t>(c, 0, W - 1);
      }
      return A(img[r * W + c]);
    };
    if (H <= 0 || W <= 0) return;  // all-zero output (already zero-filled)
    parallel_for(N * Ho, Wo * C * 16, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t n = row / Ho, oy = row % Ho;
        for (int64_t ox = 0; ox < Wo; ++ox) {
          const G* g = grid + ((n * Ho + oy) * Wo + ox) * 2;
          double gx = denorm(double(g[0]), W), gy = denorm(double(g[1]), H);
          for (int64_t c = 0; c < C; ++c) {
            const T* img = X + (n * C + c) * H * W;
            A v;
            if (!std::isfinite(gx) || !std::isfinite(gy)) {
              v = A(0);
            } else if (mode_ == GsMode::kNearest) {
              double rx = std::nearbyint(gx), ry = std::nearbyint(gy);
              if (pad_ == GsPad::kReflection) {
                rx = std::nearbyint(reflect(rx, xmin, xmax));
                ry = std::nearbyint(reflect(ry, ymin, ymax));
              }
              v = pixel(img, int64_t(ry), int64_t(rx));
            } else if (mode_ == GsMode::kLinear) {
              double fx = std::floor(gx), fy = std::floor(gy);
              int64_t x1 = int64_t(fx), y1 = int64_t(fy);
              A dx1 = A(gx - fx), dy1 = A(gy - fy), dx2 = A(1) - dx1, dy2 = A(1) - dy1;
              A p11 = pixel(img, y1, x1), p12 = pixel(img, y1, x1 + 1);
              A p21 = pixel(img, y1 + 1, x1), p22 = pixel(img, y1 + 1, x1 + 1);
              v = dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22);
            } else {
              double fx = std::floor(gx), fy = std::floor(gy);
              int64_t x0 = int64_t(fx) - 1, y0 = int64_t(fy) - 1;
              double cx[4], cy[4];
              cubic_coeffs(gx - fx, cx);
              cubic_coeffs(gy - fy, cy);
              double acc = 0;
              for (int i = 0; i < 4; ++i) {
                double racc = 0;
                for (int j = 0; j < 4; ++j) racc += cx[j] * double(pixel(img, y0 + i, x0 + j));
                acc += cy[i] * racc;
              }
              v = A(acc);
            }
            Y[((n * C + c) * Ho + oy) * Wo + ox] = T(v);
          }
        }
      }
    });
  }

  // The volume form: (x, y, z) over (W, H, D), each axis denormalised and padded as in run().
  template <class T, class G>
  void run_volume(const Tensor& xt, const Tensor& gt, Tensor& yt) const {
    using A = AccOf<T>;
    const int64_t N = xt.dim(0), C = xt.dim(1), len[3] = {xt.dim(4), xt.dim(3), xt.dim(2)};  // W, H, D
    const int64_t Do = gt.dim(1), Ho = gt.dim(2), Wo = gt.dim(3), points = Do * Ho * Wo;
    const T* X = xt.data<T>();
    const G* grid = gt.data<G>();
    T* Y = yt.data<T>();
    if (len[0] <= 0 || len[1] <= 0 || len[2] <= 0) return;  // all-zero output (already zero-filled)
    double lo[3], hi[3];
    for (int a = 0; a < 3; ++a) lo[a] = align_ ? 0 : -0.5, hi[a] = align_ ? double(len[a] - 1) : double(len[a]) - 0.5;
    // Voxel (x, y, z) of one channel volume, with the padding mode applied to the integer position.
    auto voxel = [&](const T* vol, int64_t p[3]) -> A {
      int64_t q[3];
      for (int a = 0; a < 3; ++a) {
        q[a] = p[a];
        if (pad_ == GsPad::kZeros) {
          if (q[a] < 0 || q[a] >= len[a]) return A(0);
        } else {
          if (pad_ == GsPad::kReflection) q[a] = int64_t(reflect(double(q[a]), lo[a], hi[a]));
          q[a] = std::clamp<int64_t>(q[a], 0, len[a] - 1);
        }
      }
      return A(vol[(q[2] * len[1] + q[1]) * len[0] + q[0]]);
    };
    parallel_for(N * points, C * 16, [&](int64_t b, int64_t e) {
      for (int64_t at = b; at < e; ++at) {
        const int64_t n = at / points, pt = at % points;
        const G* g = grid + at * 3;
        double u[3];
        bool finite = true;
        for (int a = 0; a < 3; ++a) {
          const double v = double(g[a]);
          u[a] = align_ ? (v + 1) / 2.0 * double(len[a] - 1) : ((v + 1) * double(len[a]) - 1) / 2.0;
          finite = finite && std::isfinite(u[a]);
        }
        for (int64_t c = 0; c < C; ++c) {
          const T* vol = X + (n * C + c) * len[0] * len[1] * len[2];
          A v = A(0);
          if (!finite) {
          } else if (mode_ == GsMode::kNearest) {
            int64_t p[3];
            for (int a = 0; a < 3; ++a) {
              double r = std::nearbyint(u[a]);
              if (pad_ == GsPad::kReflection) r = std::nearbyint(reflect(r, lo[a], hi[a]));
              p[a] = int64_t(r);
            }
            v = voxel(vol, p);
          } else {  // trilinear over the 8 corners
            int64_t base[3];
            A frac[3];
            for (int a = 0; a < 3; ++a) {
              const double f = std::floor(u[a]);
              base[a] = int64_t(f);
              frac[a] = A(u[a] - f);
            }
            for (int corner = 0; corner < 8; ++corner) {
              int64_t p[3];
              A w = A(1);
              for (int a = 0; a < 3; ++a) {
                const int bit = (corner >> a) & 1;
                p[a] = base[a] + bit;
                w *= bit ? frac[a] : A(1) - frac[a];
              }
              v += w * voxel(vol, p);
            }
          }
          Y[(n * C + c) * points + pt] = T(v);
        }
      }
    });
  }

  GsMode mode_ = GsMode::kLinear;
  GsPad pad_ = GsPad::kZeros;
  bool align_ = false;
};

// ---------------------------------------------------------------------------------------------
// RoiAlign: X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices [R]
//   -> Y [R, C, output_height, output_width].

class RoiAlignKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    std::string mode = node.attrs.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") return invalid_model("attribute mode is '" + mode + "'; expected avg or max");
    max_ = mode == "max";
    oh_ = node.attrs.get_int("output_height", 1);
    ow_ = node.attrs.get_int("output_width", 1);
    sampling_ = node.attrs.get_int("sampling_ratio", 0);
    scale_ = node.attrs.get_float("spatial_scale", 1.0f);
    std::string ctm = node.attrs.get_string("coordinate_transformation_mode", opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel") {
      return invalid_model("attribute coordinate_transformation_mode is '" + ctm + "'; expected half_pixel or output_half_pixel");
    }
    half_pixel_ = ctm == "half_pixel";
    if (oh_ <= 0 || ow_ <= 0) {
      return invalid_model("attributes output_height/output_width are " + std::to_string(oh_) + "/" +
                           std::to_string(ow_) + "; expected > 0");
    }
    if (sampling_ < 0) return invalid_model("attribute sampling_ratio is " + std::to_string(sampling_) + "; expected >= 0");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2)) return invalid_model("needs inputs X, rois and batch_indices");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    INGOT_RETURN_IF_ERROR(check_float(ctx, 1, "rois"));
    const Shape& xs = ctx.input_shape(0);
    if (xs.size() != 4) return invalid_argument("input 0 (X) has shape " + shape_str(xs) + "; expected [N, C, H, W]");
    const Shape& rs = ctx.input_shape(1);
    if (rs.size() != 2 || rs[1] != 4) return invalid_argument("input 1 (rois) has shape " + shape_str(rs) + ", expected [num_rois, 4]");
    const Shape& bs = ctx.input_shape(2);
    if (!dtype_is_integer(ctx.input_dtype(2))) {
      return invalid_argument("input 2 (batch_indices) has dtype " + dtype_name(ctx.input_dtype(2)) + "; expected int64");
    }
    if (bs.size() != 1 || bs[0] != rs[0]) {
      return invalid_argument("input 2 (batch_indices) has shape " + shape_str(bs) + ", expected " + std::to_string(rs[0]) +
                              " (one per roi)");
    }
    ctx.set_output(0, ctx.input_dtype(0), {rs[0], xs[1], oh_, ow_});
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& rois_t = ctx.input(1);
    const Tensor& bi_t = ctx.input(2);
    const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois_t.dim(0);
    std::vector<double> rois(static_cast<size_t>(R * 4));
    dispatch_float(rois_t.dtype(), [&](auto tag) {
      using G = typename decltype(tag)::type;
      for (int64_t i = 0; i < R * 4; ++i) rois[size_t(i)] = double(rois_t.data<G>()[i]);
    });
    std::vector<int64_t> bidx(static_cast<size_t>(R));
    for (int64_t r = 0; r < R; ++r) {
      bidx[size_t(r)] = bi_t.scalar_as_int(r);
      if (bidx[size_t(r)] < 0 || bidx[size_t(r)] >= N) {
        return invalid_argument("input 2 (batch_indices) has value " + std::to_string(bidx[size_t(r)]) + " at " +
                                std::to_string(r) + ", out of range [0, " + std::to_string(N) + ")");
      }
    }
    Tensor& y = ctx.output(0);
    if (H <= 0 || W <= 0) return Status::ok();  // nothing to sample: zeros
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* X = x.data<T>();
      T* Y = y.data<T>();
      const double off = half_pixel_ ? 0.5 : 0.0;
      parallel_for(R * C, oh_ * ow_ * 16, [&](int64_t b, int64_t e) {
        for (int64_t rc = b; rc < e; ++rc) {
          int64_t r = rc / C, c = rc % C;
          const double* roi = &rois[size_t(r * 4)];
          double sw = roi[0] * scale_ - off, sh = roi[1] * scale_ - off;
          double ew = roi[2] * scale_ - off, eh = roi[3] * scale_ - off;
          double rw = ew - sw, rh = eh - sh;
          if (!half_pixel_) { rw = std::max(rw, 1.0); rh = std::max(rh, 1.0); }
          double bin_h = rh / double(oh_), bin_w = rw / double(ow_);
          int64_t gh = sampling_ > 0 ? sampling_ : int64_t(std::ceil(rh / double(oh_)));
          int64_t gw = sampling_ > 0 ? sampling_ : int64_t(std::ceil(rw / double(ow_)));
          gh = std::max<int64_t>(gh, 0);
          gw = std::max<int64_t>(gw, 0);
          double count = double(std::max<int64_t>(gh * gw, 1));
          const T* img = X + (bidx[size_t(r)] * C + c) * H * W;
          for (int64_t ph = 0; ph < oh_; ++ph) {
            for (int64_t pw = 0; pw < ow_; ++pw) {
              double acc = 0;
              bool first = true;
              for (int64_t iy = 0; iy < gh; ++iy) {
                double yy = sh + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(gh);
                for (int64_t ix = 0; ix < gw; ++ix) {
                  double xx = sw + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(gw);
                  double w[4] = {0, 0, 0, 0};
                  int64_t idx[4] = {0, 0, 0, 0};
                  if (!(yy < -1.0 || yy > double(H) || xx < -1.0 || xx > double(W))) {
                    double y0 = std::max(yy, 0.0), x0 = std::max(xx, 0.0);
                    int64_t yl = int64_t(y0), xl = int64_t(x0), yh, xh;
                    if (yl >= H - 1) { yh = yl = H - 1; y0 = double(yl); } else { yh = yl + 1; }
                    if (xl >= W - 1) { xh = xl = W - 1; x0 = double(xl); } else { xh = xl + 1; }
                    double ly = y0 - double(yl), lx = x0 - double(xl), hy = 1 - ly, hx = 1 - lx;
                    w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;
                    idx[0] = yl * W + xl; idx[1] = yl * W + xh; idx[2] = yh * W + xl; idx[3] = yh * W + xh;
                  }
                  if (max_) {
                    double v = std::max(std::max(w[0] * double(img[idx[0]]), w[1] * double(img[idx[1]])),
                                        std::max(w[2] * double(img[idx[2]]), w[3] * double(img[idx[3]])));
                    acc = first ? v : std::max(acc, v);
                    first = false;
                  } else {
                    for (int k = 0; k < 4; ++k) acc += w[k] * double(img[idx[k]]);
                  }
                }
              }
              Y[(rc * oh_ + ph) * ow_ + pw] = T(max_ ? acc : acc / count);
            }
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  bool max_ = false, half_pixel_ = true;
  int64_t oh_ = 1, ow_ = 1, sampling_ = 0;
  float scale_ = 1.0f;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", GridSample, GridSampleKernel);
INGOT_REGISTER_KERNEL(cpu, "", RoiAlign, RoiAlignKernel);

}  // namespace ingot
