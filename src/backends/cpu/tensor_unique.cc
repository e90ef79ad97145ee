// Unique: distinct elements (or slices along `axis`), sorted or in order of first occurrence,
// with first-occurrence indices, inverse indices and counts.
#include <numeric>

#include "backends/cpu/tensor_util.h"

namespace ingot {
namespace tensor_ops {
namespace {

class UniqueKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    sorted_ = node.attrs.get_int("sorted", 1) != 0;
    has_axis_ = node.attrs.has("axis");
    axis_ = node.attrs.get_int("axis", 0);
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "X"));
    const Shape& s = ctx.input_shape(0);
    int64_t n = shape_numel(s);
    if (has_axis_) {
      if (s.empty()) return invalid_argument("axis is set but the input is a scalar");
      INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axis_, int(s.size())));
      n = s[size_t(a)];
    }
    ctx.set_output_dynamic(0, ctx.input_dtype(0));
    for (int i = 1; i < 4; ++i) ctx.set_output_dynamic(i, DType::kInt64);
    if (ctx.num_outputs() > 2) ctx.set_output(2, DType::kInt64, {n});
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int a = -1;
    if (has_axis_) {
      INGOT_ASSIGN_OR_RETURN(a, normalize_axis(axis_, x.rank()));
    }
    int64_t outer = 1, n = x.numel(), inner = 1;
    if (a >= 0) {
      outer = prod(x.shape(), 0, size_t(a));
      n = x.dim(a);
      inner = prod(x.shape(), size_t(a) + 1, x.shape().size());
    }
    int64_t len = outer * inner;  // elements per compared row
    std::vector<int64_t> first, inverse(static_cast<size_t>(n)), counts;
    size_t es = dtype_size(x.dtype());
    // Rows laid out contiguously: row k = x[o, k, i] for all (o, i).
    std::vector<uint8_t> rows;
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    const uint8_t* rp = src;
    if (a >= 0 && outer > 1 && inner > 0) {  // (rows of no elements are never read)
      rows.resize(size_t(n * len) * es);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < n; ++k)
          std::memcpy(rows.data() + (k * len + o * inner) * int64_t(es), src + ((o * n + k) * inner) * int64_t(es),
                      size_t(inner) * es);
      rp = rows.data();
    }
    dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* d = reinterpret_cast<const T*>(rp);
      auto less = [&](int64_t p, int64_t q) {
        const T* u = d + p * len;
        const T* v = d + q * len;
        for (int64_t i = 0; i < len; ++i) {
          auto x1 = arith(u[i]), y1 = arith(v[i]);
          if (x1 < y1) return true;
          if (y1 < x1) return false;
        }
        return false;
      };
      std::vector<int64_t> perm(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      std::stable_sort(perm.begin(), perm.end(), less);
      std::vector<int64_t> group_of(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        int64_t p = perm[size_t(i)];
        if (i == 0 || less(perm[size_t(i - 1)], p)) {
          first.push_back(p);
          counts.push_back(0);
        }
        group_of[size_t(p)] = int64_t(first.size()) - 1;
        ++counts.back();
      }
      std::vector<int64_t> rank_of(first.size());
      std::iota(rank_of.begin(), rank_of.end(), 0);
      if (!sorted_) {  // order groups by first occurrence
        std::vector<int64_t> g(first.size());
        std::iota(g.begin(), g.end(), 0);
        std::sort(g.begin(), g.end(), [&](int64_t p, int64_t q) { return first[size_t(p)] < first[size_t(q)]; });
        std::vector<int64_t> f2, c2;
        for (size_t r = 0; r < g.size(); ++r) {
          rank_of[size_t(g[r])] = int64_t(r);
          f2.push_back(first[size_t(g[r])]);
          c2.push_back(counts[size_t(g[r])]);
        }
        first = std::move(f2);
        counts = std::move(c2);
      }
      for (int64_t i = 0; i < n; ++i) inverse[size_t(i)] = rank_of[size_t(group_of[size_t(i)])];
    });
    int64_t u = int64_t(first.size());
    Shape ys = a >= 0 ? x.shape() : Shape{u};
    if (a >= 0) ys[size_t(a)] = u;
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < u; ++j)
        std::memcpy(dst + ((o * u + j) * inner) * int64_t(es), src + ((o * n + first[size_t(j)]) * inner) * int64_t(es),
                    size_t(inner) * es);
    auto put = [&](int i, const std::vector<int64_t>& v) {
      if (!ctx.has_output(i)) return;
      Tensor& t = ctx.allocate_output(i, DType::kInt64, {int64_t(v.size())});
      if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * 8);
    };
    put(1, first);
    put(2, inverse);
    put(3, counts);
    return Status::ok();
  }

 private:
  bool sorted_ = true, has_axis_ = false;
  int64_t axis_ = 0;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Unique, tensor_ops::UniqueKernel);

}  // namespace ingot
