// Pooling: MaxPool (with Indices, storage_order, dilations, ceil_mode; float types and
// int8/uint8), AveragePool (count_include_pad, ceil_mode, dilations), LpPool, and the global
// variants. Own loops, parallel over (N, C) planes; any number of spatial dims. float32
// MaxPool (no Indices, no dilation) and AveragePool (no dilation) with 1-3 spatial dims run
// oneDNN's pooling primitive instead; the loop stays the reference for everything else.
//
// Layouts: MaxPool / AveragePool / LpPool with the attribute `channels_last` = 1 (set by
// fuse_conv_activation between channels-last convolutions) take and produce [N, spatial..., C]
// (oneDNN runs on those buffers directly, with nwc/nhwc/ndhwc memory); the global pools with
// `x_channels_last` = 1 take [N, spatial..., C] and produce the usual [N, C, 1, ...].
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/dnnl_util.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using dnnl_util::ints_str;
using dnnl_util::Spatial;

enum class Mode { kMax, kAvg, kLp };

struct Geometry {
  size_t nd = 0;
  int64_t n = 0, c = 0;
  Shape in, out;  // spatial dims only
  std::vector<int64_t> k, st, dl, pb, pe;
};

// The stored shape of a tensor of batch n, channels c and these spatial dims.
Shape stored_shape(int64_t n, int64_t c, const Shape& spatial, bool cl) {
  Shape r = {n};
  if (!cl) r.push_back(c);
  r.insert(r.end(), spatial.begin(), spatial.end());
  if (cl) r.push_back(c);
  return r;
}

struct PoolPrim {
  dnnl::pooling_forward prim;
  dnnl::pooling_forward::primitive_desc pd;
};

dnnl::memory::format_tag layout_tag(size_t rank, bool cl) {
  using ft = dnnl::memory::format_tag;
  if (cl) return rank == 3 ? ft::nwc : rank == 4 ? ft::nhwc : ft::ndhwc;
  return rank == 3 ? ft::abc : rank == 4 ? ft::abcd : ft::abcde;
}

template <class F> bool dispatch_pool(DType t, bool allow_int8, F&& f) {
  if (allow_int8 && t == DType::kInt8) { f(TypeTag<int8_t>{}); return true; }
  if (allow_int8 && t == DType::kUInt8) { f(TypeTag<uint8_t>{}); return true; }
  return dispatch_float(t, f);
}

class PoolKernel : public OpKernel {
 public:
  explicit PoolKernel(Mode m) : mode_(m) {}

  Status init(const Node& node, int opset) override {
    INGOT_RETURN_IF_ERROR(sp_.parse(node));
    if (sp_.kernel_shape.empty()) return invalid_model("attribute kernel_shape is required");
    storage_order_ = node.attrs.get_int("storage_order", 0);
    if (storage_order_ != 0 && storage_order_ != 1)
      return invalid_model("storage_order=" + std::to_string(storage_order_) + " must be 0 or 1");
    count_include_pad_ = node.attrs.get_int("count_include_pad", 0) != 0;
    channels_last_ = node.attrs.get_int("channels_last", 0) != 0;
    p_ = mode_ == Mode::kLp ? double(node.attrs.has("p") && node.attrs.find("p")->kind == Attribute::Kind::kFloat
                                         ? node.attrs.get_float("p", 2.f)
                                         : double(node.attrs.get_int("p", 2)))
                            : 2.0;
    if (mode_ == Mode::kLp && !(p_ > 0)) return invalid_model("p=" + std::to_string(p_) + " must be positive");
    return Status::ok();
  }

  // `stored` is X's shape as stored (channels-last or not).
  Status geometry(const Shape& stored, Geometry& g) const {
    if (stored.size() < 3)
      return invalid_argument("input 0 (X) has shape " + shape_str(stored) + "; pooling needs rank >= 3 (" +
                              (channels_last_ ? "N, spatial..., C" : "N, C, spatial...") + ")");
    const Shape x = channels_first_shape(stored, channels_last_);
    g.nd = x.size() - 2;
    g.n = x[0], g.c = x[1];
    if (sp_.kernel_shape.size() != g.nd)
      return invalid_model("kernel_shape " + ints_str(sp_.kernel_shape) + " has " +
                           std::to_string(sp_.kernel_shape.size()) + " entries, X has " + std::to_string(g.nd) +
                           " spatial dims");
    g.in.assign(x.begin() + 2, x.end());
    g.k = sp_.kernel_shape;
    return sp_.resolve(g.in, g.k, g.st, g.dl, g.pb, g.pe, g.out, true);
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0))
      return invalid_model("needs 1 input (X), got " + std::to_string(ctx.num_inputs()));
    DType t = ctx.input_dtype(0);
    if (!dispatch_pool(t, mode_ == Mode::kMax, [](auto) {}))
      return unsupported("input 0 (X) has dtype " + dtype_name(t) + ", which this pooling op does not support");
    if (mode_ != Mode::kMax && ctx.num_outputs() > 1) return invalid_model("has 1 output, got " + std::to_string(ctx.num_outputs()));
    if (channels_last_ && ctx.has_output(1)) return unsupported("the Indices output with channels_last=1");
    Geometry g;
    INGOT_RETURN_IF_ERROR(geometry(ctx.input_shape(0), g));
    Shape y = stored_shape(g.n, g.c, g.out, channels_last_);
    ctx.set_output(0, t, y);
    if (ctx.has_output(1)) ctx.set_output(1, DType::kInt64, y);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    Geometry g;
    INGOT_RETURN_IF_ERROR(geometry(X.shape(), g));
    Tensor& Y = ctx.output(0);
    int64_t* idx = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
    dnnl::algorithm alg;
    std::vector<int64_t> pr;
    if (!idx && dnnl_eligible(X, g, alg, pr)) {
      bool rejected = false;
      Status s = dnnl_util::guard([&]() -> Status {
        auto p = cache_.get(dnnl_util::key_of({X.shape(), g.k, g.st, g.pb, pr, {int64_t(alg)}}),
                            [&]() -> std::shared_ptr<PoolPrim> {
                              using md = dnnl::memory::desc;
                              // Logical dims; the tag says how they are stored.
                              auto tag = layout_tag(X.rank(), channels_last_);
                              md src(dnnl_util::to_dims(stored_shape(g.n, g.c, g.in, false)),
                                     dnnl::memory::data_type::f32, tag);
                              md dst(dnnl_util::to_dims(stored_shape(g.n, g.c, g.out, false)),
                                     dnnl::memory::data_type::f32, tag);
                              dnnl::memory::dims st(g.st.begin(), g.st.end()), k(g.k.begin(), g.k.end()),
                                  pl(g.pb.begin(), g.pb.end()), prd(pr.begin(), pr.end());
                              try {
                                dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, st,
                                                              k, pl, prd);
                                dnnl::pooling_forward::primitive_desc pd(d, dnnl_util::user_scratchpad_attr(),
                                                                         dnnl_util::cpu_engine());
                                return std::make_shared<PoolPrim>(PoolPrim{dnnl::pooling_forward(pd), pd});
                              } catch (const dnnl::error&) {
                                return nullptr;  // cached: this shape keeps using the loop
                              }
                            });
        if (!p) {
          rejected = true;
          return Status::ok();
        }
        auto& eng = dnnl_util::cpu_engine();
        dnnl::memory xm(p->pd.src_desc(), eng, const_cast<float*>(X.data<float>()));
        dnnl::memory ym(p->pd.dst_desc(), eng, Y.data<float>());
        dnnl_util::execute(p->prim, p->pd, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
        return Status::ok();
      });
      if (!s.is_ok() || !rejected) return s;
    }
    dispatch_pool(X.dtype(), mode_ == Mode::kMax, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run<T>(X, g, Y, idx);
    });
    return Status::ok();
  }

 private:
  // Whether oneDNN computes exactly what the loop would: float32, 1-3 spatial dims, no
  // dilation, every window overlapping the input; for count_include_pad, no ceil_mode window
  // reaching past the explicit end pads (the loop does not count those). Sets the algorithm
  // and the end pads that give oneDNN the same output size (ceil_mode).
  bool dnnl_eligible(const Tensor& X, const Geometry& g, dnnl::algorithm& alg, std::vector<int64_t>& pr) const {
    if (mode_ == Mode::kLp || X.dtype() != DType::kFloat32 || g.nd < 1 || g.nd > 3) return false;
    if (X.numel() == 0 || shape_numel(g.out) == 0) return false;
    alg = mode_ == Mode::kMax ? dnnl::algorithm::pooling_max
          : count_include_pad_ ? dnnl::algorithm::pooling_avg_include_padding
                               : dnnl::algorithm::pooling_avg_exclude_padding;
    pr.assign(g.nd, 0);
    for (size_t d = 0; d < g.nd; ++d) {
      if (g.dl[d] != 1 || g.pb[d] >= g.k[d] || g.pe[d] >= g.k[d]) return false;
      pr[d] = std::max<int64_t>(0, (g.out[d] - 1) * g.st[d] + g.k[d] - g.in[d] - g.pb[d]);
      if (mode_ == Mode::kAvg && count_include_pad_ && pr[d] > g.pe[d]) return false;
      if ((g.in[d] + g.pb[d] + pr[d] - g.k[d]) / g.st[d] + 1 != g.out[d]) return false;
    }
    return true;
  }

  // Indices (idx) are only asked for in NCHW (infer() refuses them with channels_last).
  template <class T>
  void run(const Tensor& X, const Geometry& g, Tensor& Y, int64_t* idx) const {
    size_t nd = g.nd;
    int64_t planes = g.n * g.c;
    int64_t in_plane = shape_numel(g.in), out_plane = shape_numel(g.out);
    // Plane pl = (n, c) of a tensor with `plane` spatial elements starts at
    // plane_start(pl, plane) and its elements are `step` apart: NCHW planes are contiguous,
    // channels-last ones interleave.
    const int64_t step = channels_last_ ? g.c : 1;
    auto plane_start = [&](int64_t pl, int64_t plane) {
      return channels_last_ ? (pl / g.c) * plane * g.c + pl % g.c : pl * plane;
    };
    int64_t kn = shape_numel(g.k);
    // Per kernel element: dilated offset per dim.
    std::vector<int64_t> koff(size_t(kn) * nd);
    for (int64_t e = 0; e < kn; ++e) {
      int64_t r = e;
      for (int d = int(nd) - 1; d >= 0; --d) {
        koff[size_t(e) * nd + size_t(d)] = (r % g.k[size_t(d)]) * g.dl[size_t(d)];
        r /= g.k[size_t(d)];
      }
    }
    std::vector<int64_t> is = strides_of(g.in);
    std::vector<int64_t> cs(nd);  // column-major strides for storage_order=1
    for (size_t d = 0, acc = 1; d < nd; ++d) cs[d] = int64_t(acc), acc *= size_t(g.in[d]);
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    Mode mode = mode_;
    parallel_for(planes, out_plane * kn, [&](int64_t p0, int64_t p1) {
      std::vector<int64_t> start(nd), oc(nd);
      for (int64_t pl = p0; pl < p1; ++pl) {
        const T* xp = x + plane_start(pl, in_plane);
        T* yp = y + plane_start(pl, out_plane);
        for (int64_t o = 0; o < out_plane; ++o) {
          int64_t r = o;
          for (int d = int(nd) - 1; d >= 0; --d) {
            oc[size_t(d)] = r % g.out[size_t(d)];
            r /= g.out[size_t(d)];
            start[size_t(d)] = oc[size_t(d)] * g.st[size_t(d)] - g.pb[size_t(d)];
          }
          double acc = 0;
          int64_t cnt = 0, cnt_pad = 0;
          float best = -std::numeric_limits<float>::infinity();
          T bestv = std::numeric_limits<T>::lowest();
          int64_t best_at = -1;
          bool any = false;
          for (int64_t e = 0; e < kn; ++e) {
            const int64_t* ko = &koff[size_t(e) * nd];
            int64_t lin = 0;
            bool inside = true, in_padded = true;
            for (size_t d = 0; d < nd; ++d) {
              int64_t c = start[d] + ko[d];
              if (c < 0 || c >= g.in[d]) {
                inside = false;
                if (c < -g.pb[d] || c >= g.in[d] + g.pe[d]) in_padded = false;
              }
              lin += c * is[d];
            }
            cnt_pad += in_padded;
            if (!inside) continue;
            T v = xp[lin * step];
            if (mode == Mode::kMax) {
              if constexpr (std::is_integral_v<T>) {
                if (!any || v > bestv) bestv = v, best_at = lin, any = true;
              } else {
                float fv = float(v);
                if (!any || fv > best || (std::isnan(fv) && !std::isnan(best))) best = fv, best_at = lin, any = true;
              }
            } else if (mode == Mode::kAvg) {
              acc += double(float(v)), ++cnt;
            } else {
              acc += std::pow(std::fabs(double(float(v))), p_);
            }
          }
          T* yo = yp + o * step;
          if (mode == Mode::kMax) {
            if constexpr (std::is_integral_v<T>) *yo = bestv;
            else *yo = T(best);
            if (idx) {
              int64_t at = 0;
              if (best_at >= 0) {
                if (storage_order_ == 0) {
                  at = best_at;
                } else {
                  int64_t rr = best_at;
                  for (int d = int(nd) - 1; d >= 0; --d) {
                    at += (rr % g.in[size_t(d)]) * cs[size_t(d)];
                    rr /= g.in[size_t(d)];
                  }
                }
              }
              idx[pl * out_plane + o] = pl * in_plane + at;
            }
          } else if (mode == Mode::kAvg) {
            int64_t div = count_include_pad_ ? cnt_pad : cnt;
            *yo = T(float(div ? acc / double(div) : 0.0));
          } else {
            *yo = T(float(std::pow(acc, 1.0 / p_)));
          }
        }
      }
    });
  }

  Mode mode_;
  Spatial sp_;
  int64_t storage_order_ = 0;
  bool count_include_pad_ = false;
  bool channels_last_ = false;
  double p_ = 2;
  mutable dnnl_util::Cache<PoolPrim> cache_;
};

struct MaxPoolKernel : PoolKernel { MaxPoolKernel() : PoolKernel(Mode::kMax) {} };
struct AveragePoolKernel : PoolKernel { AveragePoolKernel() : PoolKernel(Mode::kAvg) {} };
struct LpPoolKernel : PoolKernel { LpPoolKernel() : PoolKernel(Mode::kLp) {} };

// The running result of one global pool over one channel: the maximum (a NaN sticks), the sum,
// or the sum of |x|^p.
template <class T>
struct GlobalAcc {
  Mode mode;
  double p;
  T best{};
  bool any = false;
  double sum = 0;

  void add(T v) {
    if (mode == Mode::kMax) {
      if constexpr (std::is_integral_v<T>) {
        if (!any || v > best) best = v;
      } else {
        if (!any || float(v) > float(best) || std::isnan(float(v))) best = v;
      }
      any = true;
    } else if (mode == Mode::kAvg) {
      sum += double(float(v));
    } else {
      sum += std::pow(std::fabs(double(float(v))), p);
    }
  }
  T result(int64_t count) const {
    if (mode == Mode::kMax) return best;
    if (mode == Mode::kAvg) return T(float(sum / double(count)));
    return T(float(std::pow(sum, 1.0 / p)));
  }
};

class GlobalPoolKernel : public OpKernel {
 public:
  explicit GlobalPoolKernel(Mode m) : mode_(m) {}
  Status init(const Node& node, int opset) override {
    x_channels_last_ = node.attrs.get_int("x_channels_last", 0) != 0;
    if (mode_ == Mode::kLp) {
      const Attribute* a = node.attrs.find("p");  // a float before opset 2
      p_ = a && a->kind == Attribute::Kind::kFloat ? double(a->f) : double(node.attrs.get_int("p", 2));
      if (!(p_ > 0)) return invalid_model("p=" + std::to_string(p_) + " must be positive");
    }
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != 1 || !ctx.has_input(0))
      return invalid_model("needs 1 input (X), got " + std::to_string(ctx.num_inputs()));
    DType t = ctx.input_dtype(0);
    if (!dispatch_pool(t, mode_ == Mode::kMax, [](auto) {}))
      return unsupported("input 0 (X) has dtype " + dtype_name(t) + ", which this pooling op does not support");
    const Shape& stored = ctx.input_shape(0);
    if (stored.size() < 3)
      return invalid_argument("input 0 (X) has shape " + shape_str(stored) + "; pooling needs rank >= 3 (" +
                              (x_channels_last_ ? "N, spatial..., C" : "N, C, spatial...") + ")");
    Shape y = channels_first_shape(stored, x_channels_last_);
    for (size_t i = 2; i < y.size(); ++i) {
      if (y[i] == 0) return invalid_argument("input 0 (X) has an empty spatial dim: " + shape_str(stored));
      y[i] = 1;
    }
    ctx.set_output(0, t, y);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const Shape x = channels_first_shape(X.shape(), x_channels_last_);
    const int64_t n = x[0], c = x[1], spatial = n * c != 0 ? X.numel() / (n * c) : 0;
    dispatch_pool(X.dtype(), mode_ == Mode::kMax, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (x_channels_last_) pool_channels_last<T>(X.data<T>(), ctx.output(0).data<T>(), n, c, spatial);
      else pool_planes<T>(X.data<T>(), ctx.output(0).data<T>(), n * c, spatial);
    });
    return Status::ok();
  }

 private:
  // NCHW: each (n, c) plane is contiguous.
  template <class T>
  void pool_planes(const T* x, T* y, int64_t planes, int64_t spatial) const {
    parallel_for(planes, spatial, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl) {
        GlobalAcc<T> acc{mode_, p_};
        for (const T* xp = x + pl * spatial; xp < x + (pl + 1) * spatial; ++xp) acc.add(*xp);
        y[pl] = acc.result(spatial);
      }
    });
  }

  // Channels-last: a run of channels of one image is reduced together, pixel by pixel, so the
  // reads stay contiguous.
  template <class T>
  void pool_channels_last(const T* x, T* y, int64_t n, int64_t c, int64_t spatial) const {
    parallel_for(n * c, spatial, [&](int64_t b, int64_t e) {
      std::vector<GlobalAcc<T>> accs;
      for (int64_t pl = b; pl < e;) {
        const int64_t img = pl / c, c0 = pl % c, c1 = std::min(c, c0 + (e - pl));
        accs.assign(size_t(c1 - c0), GlobalAcc<T>{mode_, p_});
        const T* xi = x + img * spatial * c;
        for (int64_t s = 0; s < spatial; ++s)
          for (int64_t ch = c0; ch < c1; ++ch) accs[size_t(ch - c0)].add(xi[s * c + ch]);
        for (int64_t ch = c0; ch < c1; ++ch) y[img * c + ch] = accs[size_t(ch - c0)].result(spatial);
        pl += c1 - c0;
      }
    });
  }

  Mode mode_;
  double p_ = 2;
  bool x_channels_last_ = false;
};

struct GlobalMaxPoolKernel : GlobalPoolKernel { GlobalMaxPoolKernel() : GlobalPoolKernel(Mode::kMax) {} };
struct GlobalAveragePoolKernel : GlobalPoolKernel { GlobalAveragePoolKernel() : GlobalPoolKernel(Mode::kAvg) {} };
struct GlobalLpPoolKernel : GlobalPoolKernel { GlobalLpPoolKernel() : GlobalPoolKernel(Mode::kLp) {} };

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", MaxPool, MaxPoolKernel);
INGOT_REGISTER_KERNEL(cpu, "", AveragePool, AveragePoolKernel);
INGOT_REGISTER_KERNEL(cpu, "", LpPool, LpPoolKernel);
INGOT_REGISTER_KERNEL(cpu, "", GlobalMaxPool, GlobalMaxPoolKernel);
INGOT_REGISTER_KERNEL(cpu, "", GlobalAveragePool, GlobalAveragePoolKernel);
INGOT_REGISTER_KERNEL(cpu, "", GlobalLpPool, GlobalLpPoolKernel);

}  // namespace ingot
