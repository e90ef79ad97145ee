// TopK: the k largest (or smallest) elements along an axis with their int64 indices. Ties
// keep the lower index first; NaN ranks above every number (first for largest, last for
// smallest). Unsorted output (sorted=0) is returned sorted, which the spec allows.
#include <algorithm>
#include <cmath>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

class TopKKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    axis_ = node.attrs.get_int("axis", -1);
    largest_ = node.attrs.get_int("largest", 1) != 0;
    k_from_attr_ = opset < 10;
    if (k_from_attr_) {
      if (!node.attrs.has("k")) return invalid_model("attribute 'k' is required before opset 10");
      k_attr_ = node.attrs.get_int("k", 0);
      if (k_attr_ < 0) return invalid_model("attribute 'k' value " + std::to_string(k_attr_) + " must be >= 0");
    }
    return Status::ok();
  }

  Expected<int64_t> k_from(const Tensor* t) const {
    if (k_from_attr_) return k_attr_;
    if (t->dtype() != DType::kInt64) return invalid_argument("input 'K' must be int64, got " + dtype_name(t->dtype()));
    if (t->numel() != 1) return invalid_argument("input 'K' must hold a single value, got shape " + shape_str(t->shape()));
    return t->scalar_as_int();
  }

  Expected<Shape> out_shape(const Shape& s, int64_t k) const {
    INGOT_ASSIGN_OR_RETURN(int ax, normalize_axis(axis_, int(s.size()), "attribute 'axis' value"));
    if (s.empty()) return invalid_argument("input must have rank >= 1");
    if (k < 0 || k > s[size_t(ax)])
      return invalid_argument("K value " + std::to_string(k) + " is out of range for axis " + std::to_string(ax) +
                              " of size " + std::to_string(s[size_t(ax)]));
    Shape out = s;
    out[size_t(ax)] = k;
    return out;
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input 'X'");
    if (!k_from_attr_ && !ctx.has_input(1)) return invalid_model("needs input 'K'");
    DType t = ctx.input_dtype(0);
    if (!dtype_is_float(t) && !dtype_is_integer(t))
      return unsupported("input dtype " + dtype_name(t) + " is not supported");
    const Tensor* kt = k_from_attr_ ? nullptr : ctx.input_value(1);
    if (!k_from_attr_ && !kt) {
      INGOT_RETURN_IF_ERROR(normalize_axis(axis_, ctx.input_rank(0), "attribute 'axis' value").status());
      ctx.set_output_dynamic(0, t);
      ctx.set_output_dynamic(1, DType::kInt64);
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(int64_t k, k_from(kt));
    INGOT_ASSIGN_OR_RETURN(Shape out, out_shape(ctx.input_shape(0), k));
    ctx.set_output(0, t, out);
    ctx.set_output(1, DType::kInt64, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(int64_t k, k_from(k_from_attr_ ? nullptr : &ctx.input(1)));
    INGOT_ASSIGN_OR_RETURN(Shape os, out_shape(x.shape(), k));
    const int ax = int(axis_ < 0 ? axis_ + x.rank() : axis_);
    Tensor& vals = ctx.allocate_output(0, x.dtype(), os);
    Tensor& idxs = ctx.allocate_output(1, DType::kInt64, os);
    int64_t outer = 1, inner = 1, n = x.dim(ax);
    for (int i = 0; i < ax; ++i) outer *= x.dim(i);
    for (int i = ax + 1; i < x.rank(); ++i) inner *= x.dim(i);
    if (k == 0 || outer * inner == 0) return Status::ok();
    bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;
      const T* in = x.data<T>();
      T* vo = vals.data<T>();
      int64_t* io = idxs.data<int64_t>();
      const bool largest = largest_;
      // a before b in the output order
      auto before = [largest](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
        const bool an = a.first != a.first, bn = b.first != b.first;
        if (an || bn) {
          if (an && bn) return a.second < b.second;
          return largest ? an : bn;
        }
        if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
        return a.second < b.second;
      };
      parallel_for(outer * inner, n * 8, [&](int64_t b, int64_t e) {
        std::vector<std::pair<C, int64_t>> buf(static_cast<size_t>(n));
        for (int64_t s = b; s < e; ++s) {
          const int64_t o = s / inner, j = s % inner;
          const T* base = in + o * n * inner + j;
          for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = {C(base[i * inner]), i};
          if (k < n) {
            std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), before);
            std::sort(buf.begin(), buf.begin() + k, before);
          } else {
            std::sort(buf.begin(), buf.end(), before);
          }
          T* vb = vo + o * k * inner + j;
          int64_t* ib = io + o * k * inner + j;
          for (int64_t i = 0; i < k; ++i) {
            vb[i * inner] = T(buf[size_t(i)].first);
            ib[i * inner] = buf[size_t(i)].second;
          }
        }
      });
    });
    if (!ok) return unsupported("input dtype " + dtype_name(x.dtype()) + " is not supported");
    return Status::ok();
  }

 private:
  int64_t axis_ = -1;
  bool largest_ = true;
  bool k_from_attr_ = false;
  int64_t k_attr_ = 0;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", TopK, TopKKernel);

}  // namespace ingot
