// Pooling: MaxPool (with Indices, storage_order, dilations, ceil_mode; float types and
// int8/uint8), AveragePool (count_include_pad, ceil_mode, dilations), LpPool, and the global
// variants. Own loops, parallel over (N, C) planes; any number of spatial dims. float32
// MaxPool (no Indices, no dilation) and AveragePool (no dilation) with 1-3 spatial dims run
// oneDNN's pooling primitive instead; the loop stays the reference for everything else.
#include <cmath>
#include <limits>

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
  Shape in, out;  // spatial dims only
  std::vector<int64_t> k, st, dl, pb, pe;
};

struct PoolPrim {
  dnnl::pooling_forward prim;
  dnnl::pooling_forward::primitive_desc pd;
};

dnnl::memory::format_tag plain_tag(size_t rank) {
  using ft = dnnl::memory::format_tag;
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
    p_ = mode_ == Mode::kLp ? double(node.attrs.has("p") && node.attrs.find("p")->kind == Attribute::Kind::kFloat
                                         ? node.attrs.get_float("p", 2.f)
                                         : double(node.attrs.get_int("p", 2)))
                            : 2.0;
    if (mode_ == Mode::kLp && !(p_ > 0)) return invalid_model("p=" + std::to_string(p_) + " must be positive");
    return Status::ok();
  }

  Status geometry(const Shape& x, Geometry& g) const {
    if (x.size() < 3)
      return invalid_argument("input 0 (X) has shape " + shape_str(x) + "; pooling needs rank >= 3 (N, C, spatial...)");
    g.nd = x.size() - 2;
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
    Geometry g;
    INGOT_RETURN_IF_ERROR(geometry(ctx.input_shape(0), g));
    Shape y(ctx.input_shape(0).begin(), ctx.input_shape(0).begin() + 2);
    y.insert(y.end(), g.out.begin(), g.out.end());
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
                              auto tag = plain_tag(X.rank());
                              md src(dnnl_util::to_dims(X.shape()), dnnl::memory::data_type::f32, tag);
                              md dst(dnnl_util::to_dims(Y.shape()), dnnl::memory::data_type::f32, tag);
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

  template <class T>
  void run(const Tensor& X, const Geometry& g, Tensor& Y, int64_t* idx) const {
    size_t nd = g.nd;
    int64_t planes = X.dim(0) * X.dim(1);
    int64_t in_plane = shape_numel(g.in), out_plane = shape_numel(g.out);
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
        const T* xp = x + pl * in_plane;
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
            T v = xp[lin];
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
          T* yo = y + pl * out_plane + o;
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
  double p_ = 2;
  mutable dnnl_util::Cache<PoolPrim> cache_;
};

struct MaxPoolKernel : PoolKernel { MaxPoolKernel() : PoolKernel(Mode::kMax) {} };
struct AveragePoolKernel : PoolKernel { AveragePoolKernel() : PoolKernel(Mode::kAvg) {} };
struct LpPoolKernel : PoolKernel { LpPoolKernel() : PoolKernel(Mode::kLp) {} };

class GlobalPoolKernel : public OpKernel {
 public:
  explicit GlobalPoolKernel(Mode m) : mode_(m) {}
  Status init(const Node& node, int opset) override {
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
    const Shape& x = ctx.input_shape(0);
    if (x.size() < 3)
      return invalid_argument("input 0 (X) has shape " + shape_str(x) + "; pooling needs rank >= 3 (N, C, spatial...)");
    Shape y = x;
    for (size_t i = 2; i < y.size(); ++i) {
      if (x[i] == 0) return invalid_argument("input 0 (X) has an empty spatial dim: " + shape_str(x));
      y[i] = 1;
    }
    ctx.set_output(0, t, y);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    Tensor& Y = ctx.output(0);
    int64_t planes = X.dim(0) * X.dim(1);
    int64_t n = planes ? X.numel() / planes : 0;
    dispatch_pool(X.dtype(), mode_ == Mode::kMax, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      T* y = Y.data<T>();
      parallel_for(planes, n, [&](int64_t b, int64_t e) {
        for (int64_t pl = b; pl < e; ++pl) {
          const T* xp = x + pl * n;
          if (mode_ == Mode::kMax) {
            T m = xp[0];
            for (int64_t i = 1; i < n; ++i) {
              if constexpr (std::is_integral_v<T>) m = std::max(m, xp[i]);
              else if (float(xp[i]) > float(m) || std::isnan(float(xp[i]))) m = xp[i];
            }
            y[pl] = m;
          } else if (mode_ == Mode::kAvg) {
            double s = 0;
            for (int64_t i = 0; i < n; ++i) s += double(float(xp[i]));
            y[pl] = T(float(s / double(n)));
          } else {
            double s = 0;
            for (int64_t i = 0; i < n; ++i) s += std::pow(std::fabs(double(float(xp[i]))), p_);
            y[pl] = T(float(std::pow(s, 1.0 / p_)));
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  Mode mode_;
  double p_ = 2;
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
