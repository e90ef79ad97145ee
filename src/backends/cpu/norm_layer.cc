// LayerNormalization, GroupNormalization and MeanVarianceNormalization: normalisation with
// statistics computed over a contiguous block (LayerNorm: the trailing dims from `axis`;
// GroupNorm: one group of channels with their spatial dims) or arbitrary axes (MVN).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "backends/cpu/float_kernel_util.h"
#include "backends/cpu/row_norm.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

using cpu::AccOf;
using cpu::check_float;
using cpu::row_stats;
using cpu::to_doubles;

// ---------------------------------------------------------------------------------------------

class LayerNormKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    axis_ = node.attrs.get_int("axis", -1);
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    stash_ = node.attrs.get_int("stash_type", 1);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    if (!dtype_is_float(DType(stash_))) {
      return invalid_model("attribute stash_type is " + std::to_string(stash_) + "; expected a float type (1 = float32)");
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1)) return invalid_model("needs inputs X and Scale");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    INGOT_RETURN_IF_ERROR(check_float(ctx, 1, "Scale"));
    if (ctx.has_input(2)) INGOT_RETURN_IF_ERROR(check_float(ctx, 2, "B"));
    const Shape& xs = ctx.input_shape(0);
    int rank = int(xs.size());
    if (rank == 0) return invalid_argument("input 0 (X) is a scalar; expected rank >= 1");
    INGOT_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_, rank, "axis"));
    Shape norm(xs.begin() + axis, xs.end());
    static const char* names[] = {"X", "Scale", "B"};
    for (int i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const Shape& s = ctx.input_shape(i);
      bool ok = s.size() <= norm.size();
      for (size_t k = 0; ok && k < s.size(); ++k) {
        int64_t d = s[s.size() - 1 - k], want = norm[norm.size() - 1 - k];
        ok = d == want || d == 1;
      }
      if (!ok) {
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " + shape_str(s) +
                                ", expected " + shape_str(norm) + " (the normalized dims of X)");
      }
    }
    ctx.set_output(0, ctx.input_dtype(0), xs);
    Shape stat_shape(xs.begin(), xs.begin() + axis);
    stat_shape.resize(xs.size(), 1);
    if (ctx.has_output(1)) ctx.set_output(1, DType(stash_), stat_shape);
    if (ctx.has_output(2)) ctx.set_output(2, DType(stash_), stat_shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int axis = *normalize_axis(axis_, x.rank(), "axis");
    Shape norm(x.shape().begin() + axis, x.shape().end());
    const int64_t d = shape_numel(norm);
    const int64_t outer = d ? x.numel() / d : 0;
    // Scale and bias broadcast to the normalized shape.
    auto expand = [&](int i, double def) {
      std::vector<double> v(static_cast<size_t>(d), def);
      if (!ctx.has_input(i)) return v;
      const Tensor& t = ctx.input(i);
      std::vector<double> src = to_doubles(t);
      if (t.numel() == d) return src;
      std::vector<int64_t> bs = broadcast_strides(t.shape(), norm);
      std::vector<int64_t> idx(norm.size(), 0);
      for (int64_t k = 0; k < d; ++k) {
        int64_t off = 0;
        for (size_t j = 0; j < norm.size(); ++j) off += idx[j] * bs[j];
        v[size_t(k)] = src[size_t(off)];
        for (int j = int(norm.size()) - 1; j >= 0; --j) {
          if (++idx[size_t(j)] < norm[size_t(j)]) break;
          idx[size_t(j)] = 0;
        }
      }
      return v;
    };
    std::vector<double> scale = expand(1, 1.0), bias = expand(2, 0.0);
    std::vector<float> scale_f(scale.begin(), scale.end()), bias_f(bias.begin(), bias.end());
    std::vector<double> means(static_cast<size_t>(outer)), invs(static_cast<size_t>(outer));
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      const A* sc;
      const A* bi;
      if constexpr (std::is_same_v<A, double>) { sc = scale.data(); bi = bias.data(); }
      else { sc = scale_f.data(); bi = bias_f.data(); }
      parallel_for(outer, d * 4, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const T* p = px + r * d;
          T* q = py + r * d;
          double m, inv;
          row_stats(p, d, double(epsilon_), &m, &inv);
          means[size_t(r)] = m;
          invs[size_t(r)] = inv;
          const A am = A(m), ai = A(inv);
          for (int64_t k = 0; k < d; ++k) q[k] = T((A(p[k]) - am) * ai * sc[k] + bi[k]);
        }
      });
    });
    auto store = [&](int out, const std::vector<double>& v) {
      if (!ctx.has_output(out)) return;
      Tensor& t = ctx.output(out);
      dispatch_float(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (int64_t i = 0; i < outer; ++i) t.data<T>()[i] = T(v[size_t(i)]);
      });
    };
    store(1, means);
    store(2, invs);
    return Status::ok();
  }

 private:
  int64_t axis_ = -1, stash_ = 1;
  float epsilon_ = 1e-5f;
};

// ---------------------------------------------------------------------------------------------

class GroupNormKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    per_channel_ = opset >= 21;
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    if (!node.attrs.has("num_groups")) return invalid_model("attribute num_groups is required");
    groups_ = node.attrs.get_int("num_groups", 0);
    if (groups_ <= 0) return invalid_model("attribute num_groups is " + std::to_string(groups_) + "; expected > 0");
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    static const char* names[] = {"X", "scale", "bias"};
    for (int i = 0; i < 3; ++i) {
      if (!ctx.has_input(i)) return invalid_model(std::string("input ") + std::to_string(i) + " (" + names[i] + ") is missing");
      INGOT_RETURN_IF_ERROR(check_float(ctx, i, names[i]));
    }
    const Shape& xs = ctx.input_shape(0);
    if (xs.size() < 2) return invalid_argument("input 0 (X) has shape " + shape_str(xs) + "; expected rank >= 2 ([N, C, ...])");
    int64_t c = xs[1];
    if (c % groups_ != 0) {
      return invalid_argument("input 0 (X) has " + std::to_string(c) + " channels, not divisible by num_groups=" +
                              std::to_string(groups_));
    }
    int64_t want = per_channel_ ? c : groups_;
    for (int i = 1; i < 3; ++i) {
      if (ctx.input_rank(i) != 1 || ctx.input_shape(i)[0] != want) {
        return invalid_argument("input " + std::to_string(i) + " (" + names[i] + ") has shape " +
                                shape_str(ctx.input_shape(i)) + ", expected " + std::to_string(want) +
                                (per_channel_ ? " (the channel dim of X; opset 21+)" : " (num_groups; opset 18-20)"));
      }
    }
    ctx.set_output(0, ctx.input_dtype(0), xs);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t n = x.dim(0), c = x.dim(1), g = groups_;
    const int64_t sp = n * c == 0 ? 0 : x.numel() / (n * c);
    const int64_t cpg = c / g, block = cpg * sp;
    std::vector<double> scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = AccOf<T>;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(n * g, block * 4, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t grp = r % g;
          const T* p = px + r * block;
          T* q = py + r * block;
          double m, inv;
          row_stats(p, block, double(epsilon_), &m, &inv);
          for (int64_t cc = 0; cc < cpg; ++cc) {
            size_t pi = size_t(per_channel_ ? grp * cpg + cc : grp);
            A a = A(scale[pi] * inv), bb = A(bias[pi] - m * scale[pi] * inv);
            const T* pc = p + cc * sp;
            T* qc = q + cc * sp;
            for (int64_t k = 0; k < sp; ++k) qc[k] = T(A(pc[k]) * a + bb);
          }
        }
      });
    });
    return Status::ok();
  }

 private:
  bool per_channel_ = false;
  int64_t groups_ = 1;
  float epsilon_ = 1e-5f;
};

// ---------------------------------------------------------------------------------------------

// MeanVarianceNormalization: y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`
// (default [0, 2, 3]), as ONNX's function body defines it.
class MvnKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    axes_ = node.attrs.get_ints("axes", {0, 2, 3});
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input (X)");
    INGOT_RETURN_IF_ERROR(check_float(ctx, 0, "X"));
    std::vector<bool> red;
    INGOT_RETURN_IF_ERROR(reduced(ctx.input_rank(0), &red));
    ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Shape& s = x.shape();
    int rank = x.rank();
    std::vector<bool> red;
    INGOT_RETURN_IF_ERROR(reduced(rank, &red));
    // Kept-space strides: 0 along reduced axes.
    std::vector<int64_t> kstride(static_cast<size_t>(rank), 0);
    int64_t kept = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (!red[size_t(i)]) { kstride[size_t(i)] = kept; kept *= s[size_t(i)]; }
    }
    const int64_t total = x.numel();
    const double cnt = kept ? double(total) / double(kept) : 1.0;
    std::vector<double> sum(static_cast<size_t>(kept), 0.0), sq(static_cast<size_t>(kept), 0.0);
    std::vector<int64_t> koff(static_cast<size_t>(total));
    {
      std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
      int64_t off = 0;
      for (int64_t i = 0; i < total; ++i) {
        koff[size_t(i)] = off;
        for (int j = rank - 1; j >= 0; --j) {
          off += kstride[size_t(j)];
          if (++idx[size_t(j)] < s[size_t(j)]) break;
          off -= kstride[size_t(j)] * s[size_t(j)];
          idx[size_t(j)] = 0;
        }
      }
    }
    Tensor& y = ctx.output(0);
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < total; ++i) {
        double v = double(px[i]);
        sum[size_t(koff[size_t(i)])] += v;
        sq[size_t(koff[size_t(i)])] += v * v;
      }
      std::vector<double> mean(static_cast<size_t>(kept)), inv(static_cast<size_t>(kept));
      for (int64_t k = 0; k < kept; ++k) {
        double m = sum[size_t(k)] / cnt;
        double var = std::max(sq[size_t(k)] / cnt - m * m, 0.0);
        mean[size_t(k)] = m;
        inv[size_t(k)] = 1.0 / (std::sqrt(var) + 1e-9);
      }
      for (int64_t i = 0; i < total; ++i) {
        size_t k = size_t(koff[size_t(i)]);
        py[i] = T((double(px[i]) - mean[k]) * inv[k]);
      }
    });
    return Status::ok();
  }

 private:
  Status reduced(int rank, std::vector<bool>* red) const {
    red->assign(size_t(rank), false);
    for (int64_t a : axes_) {
      auto ax = normalize_axis(a, rank, "axes");
      if (!ax) return ax.status();
      if ((*red)[size_t(*ax)]) return invalid_model("attribute axes repeats axis " + std::to_string(a));
      (*red)[size_t(*ax)] = true;
    }
    return Status::ok();
  }

  std::vector<int64_t> axes_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", LayerNormalization, LayerNormKernel);
INGOT_REGISTER_KERNEL(cpu, "", GroupNormalization, GroupNormKernel);
INGOT_REGISTER_KERNEL(cpu, "", MeanVarianceNormalization, MvnKernel);

}  // namespace ingot
