// Einsum: general Einstein summation.
//
// The equation is parsed once. At run time every operand becomes a strided view whose labels
// are unique (a repeated label, a diagonal, becomes one dim whose stride is the sum).
// Operands are contracted left to right: each pair is laid out as [batch, m, k] x [batch, k, n]
// and multiplied with a batched matmul loop; labels no later operand or the output needs are
// summed away while laying out. The last step sums and permutes into the output order.
// Ellipsis dims broadcast (size 1 against n) like numpy's.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dispatch.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

constexpr int kEllipsis = -1;
constexpr int kEllBase = 52;  // labels 52.. are ellipsis dims
constexpr int kMaxLabels = 52 + 64;

int letter_label(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

// A strided view of a contiguous buffer of A, with unique labels.
template <class A>
struct View {
  std::vector<int> labels;
  std::vector<int64_t> dims, strides;
  const A* data = nullptr;
  std::vector<A> own;  // storage when the view owns its data
};

// Calls fn(offset_a, ...) style iteration helper: offsets for a multi-index over `dims` with
// one stride set, starting at linear index `start`.
struct Counter {
  std::vector<int64_t> dims, strides, idx;
  int64_t off = 0;
  void seek(int64_t lin) {
    idx.assign(dims.size(), 0);
    off = 0;
    for (int d = int(dims.size()) - 1; d >= 0; --d) {
      int64_t n = dims[size_t(d)];
      idx[size_t(d)] = n ? lin % n : 0;
      lin = n ? lin / n : 0;
      off += idx[size_t(d)] * strides[size_t(d)];
    }
  }
  void next() {
    for (int d = int(dims.size()) - 1; d >= 0; --d) {
      off += strides[size_t(d)];
      if (++idx[size_t(d)] < dims[size_t(d)]) return;
      off -= strides[size_t(d)] * dims[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
};

class EinsumKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    if (!node.attrs.has("equation")) return invalid_model("attribute equation is required");
    std::string eq;
    for (char c : node.attrs.get_string("equation", "")) if (c != ' ' && c != '\t') eq += c;
    equation_ = eq;
    std::string lhs = eq, rhs;
    size_t arrow = eq.find("->");
    explicit_ = arrow != std::string::npos;
    if (explicit_) { lhs = eq.substr(0, arrow); rhs = eq.substr(arrow + 2); }
    std::vector<std::string> terms;
    size_t pos = 0;
    while (true) {
      size_t c = lhs.find(',', pos);
      terms.push_back(lhs.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
      if (c == std::string::npos) break;
      pos = c + 1;
    }
    for (const std::string& t : terms) {
      std::vector<int> v;
      INGOT_RETURN_IF_ERROR(parse_term(t, &v));
      inputs_.push_back(std::move(v));
    }
    if (explicit_) {
      INGOT_RETURN_IF_ERROR(parse_term(rhs, &output_));
      std::vector<int> seen(kMaxLabels, 0);
      for (int l : output_) {
        if (l >= 0 && seen[size_t(l)]++) return invalid_model("equation '" + equation_ + "' repeats a label in the output");
        if (l >= 0) {
          bool found = false;
          for (auto& in : inputs_) found = found || std::count(in.begin(), in.end(), l) > 0;
          if (!found) return invalid_model("equation '" + equation_ + "': an output label does not appear in any input");
        }
      }
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.num_inputs() != int(inputs_.size())) {
      return invalid_model("equation '" + equation_ + "' has " + std::to_string(inputs_.size()) + " operands but the node has " +
                           std::to_string(ctx.num_inputs()) + " inputs");
    }
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) return invalid_model("input " + std::to_string(i) + " is missing");
      DType dt = ctx.input_dtype(i);
      if (!(dtype_is_float(dt) || dtype_is_integer(dt))) {
        return invalid_argument("input " + std::to_string(i) + " has dtype " + dtype_name(dt) + "; expected a numeric type");
      }
      if (dt != ctx.input_dtype(0)) {
        return invalid_argument("input " + std::to_string(i) + " has dtype " + dtype_name(dt) + ", expected " +
                                dtype_name(ctx.input_dtype(0)) + " (the dtype of input 0)");
      }
      shapes.push_back(ctx.input_shape(i));
    }
    Layout lay;
    INGOT_RETURN_IF_ERROR(layout(shapes, &lay));
    Shape out;
    for (int l : lay.out_labels) out.push_back(lay.size[size_t(l)]);
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.input(i).shape());
    Layout lay;
    INGOT_RETURN_IF_ERROR(layout(shapes, &lay));
    Tensor& y = ctx.output(0);
    DType dt = ctx.input(0).dtype();
    bool ok = dispatch_numeric(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T, double>, double,
                                   std::conditional_t<std::is_integral_v<T>, int64_t, float>>;
      run<T, A>(ctx, lay, y);
    });
    if (!ok) return invalid_argument("unsupported dtype " + dtype_name(dt));
    return Status::ok();
  }

 private:
  struct Layout {
    std::vector<std::vector<int>> labels;  // per input, one label per dim (ellipsis expanded)
    std::vector<int64_t> size;             // per label
    std::vector<int> out_labels;
  };

  Status parse_term(const std::string& t, std::vector<int>* v) const {
    bool ell = false;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        if (t.compare(i, 3, "...") != 0 || ell) {
          return invalid_model("equation '" + equation_ + "' has a malformed ellipsis in term '" + t + "'");
        }
        ell = true;
        v->push_back(kEllipsis);
        i += 2;
        continue;
      }
      int l = letter_label(t[i]);
      if (l < 0) return invalid_model("equation '" + equation_ + "' has an invalid character '" + std::string(1, t[i]) + "'");
      v->push_back(l);
    }
    return Status::ok();
  }

  Status layout(const std::vector<Shape>& shapes, Layout* lay) const {
    lay->size.assign(kMaxLabels, -1);
    int ell_rank = 0;
    std::vector<int> ell_of(shapes.size(), 0);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto& term = inputs_[i];
      int letters = int(std::count_if(term.begin(), term.end(), [](int l) { return l >= 0; }));
      bool has_ell = letters != int(term.size());
      int r = int(shapes[i].size());
      if ((!has_ell && r != letters) || (has_ell && r < letters)) {
        return invalid_argument("input " + std::to_string(i) + " has shape " + shape_str(shapes[i]) + " (rank " +
                                std::to_string(r) + ") but its equation term has " + std::to_string(letters) + " labels" +
                                (has_ell ? " and an ellipsis" : ""));
      }
      ell_of[i] = r - letters;
      ell_rank = std::max(ell_rank, ell_of[i]);
    }
    if (ell_rank > kMaxLabels - kEllBase) return unsupported("too many ellipsis dims");
    lay->labels.resize(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      std::vector<int>& L = lay->labels[i];
      for (int l : inputs_[i]) {
        if (l == kEllipsis) {
          for (int k = 0; k < ell_of[i]; ++k) L.push_back(kEllBase + ell_rank - ell_of[i] + k);
        } else {
          L.push_back(l);
        }
      }
      for (size_t d = 0; d < L.size(); ++d) {
        int l = L[d];
        int64_t n = shapes[i][d];
        int64_t& s = lay->size[size_t(l)];
        if (s < 0 || s == n) { s = n; continue; }
        if (l >= kEllBase && (s == 1 || n == 1)) { s = std::max(s, n); continue; }
        std::string name = l >= kEllBase ? "an ellipsis dim" : "label '" + std::string(1, l < 26 ? char('A' + l) : char('a' + l - 26)) + "'";
        return invalid_argument("input " + std::to_string(i) + " has shape " + shape_str(shapes[i]) + ": " + name +
                                " has size " + std::to_string(n) + " here but " + std::to_string(s) + " elsewhere");
      }
    }
    if (explicit_) {
      for (int l : output_) {
        if (l == kEllipsis) {
          for (int k = 0; k < ell_rank; ++k) lay->out_labels.push_back(kEllBase + k);
        } else {
          lay->out_labels.push_back(l);
        }
      }
    } else {
      for (int k = 0; k < ell_rank; ++k) lay->out_labels.push_back(kEllBase + k);
      std::vector<int> count(kMaxLabels, 0);
      for (auto& term : inputs_) for (int l : term) if (l >= 0) count[size_t(l)]++;
      for (int l = 0; l < kEllBase; ++l) if (count[size_t(l)] == 1) lay->out_labels.push_back(l);
    }
    return Status::ok();
  }

  // Contiguous copy of `v` with dims ordered as `keep`, summing every other label.
  template <class A>
  static View<A> reduce_permute(const View<A>& v, const std::vector<int>& keep, const std::vector<int64_t>& size) {
    View<A> out;
    out.labels = keep;
    Counter ko, ro;
    for (int l : keep) {
      out.dims.push_back(size[size_t(l)]);
      auto it = std::find(v.labels.begin(), v.labels.end(), l);
      ko.dims.push_back(size[size_t(l)]);
      ko.strides.push_back(it == v.labels.end() ? 0 : v.strides[size_t(it - v.labels.begin())]);
    }
    int64_t red_n = 1;
    for (size_t d = 0; d < v.labels.size(); ++d) {
      if (std::find(keep.begin(), keep.end(), v.labels[d]) != keep.end()) continue;
      ro.dims.push_back(v.dims[d]);
      ro.strides.push_back(v.strides[d]);
      red_n *= v.dims[d];
    }
    int64_t n = 1;
    for (int64_t d : out.dims) n *= d;
    out.strides.assign(out.dims.size(), 1);
    for (int d = int(out.dims.size()) - 2; d >= 0; --d) out.strides[size_t(d)] = out.strides[size_t(d + 1)] * out.dims[size_t(d + 1)];
    out.own.assign(size_t(n), A(0));
    A* dst = out.own.data();
    const A* src = v.data;
    parallel_for(n, red_n + 1, [&](int64_t b, int64_t e) {
      Counter k = ko, r = ro;
      k.seek(b);
      for (int64_t i = b; i < e; ++i, k.next()) {
        if (red_n == 1) { dst[i] = src[k.off]; continue; }
        A acc = 0;
        r.seek(0);
        for (int64_t j = 0; j < red_n; ++j, r.next()) acc += src[k.off + r.off];
        dst[i] = acc;
      }
    });
    out.data = out.own.data();
    return out;
  }

  template <class A>
  static View<A> contract(const View<A>& a, const View<A>& b, const std::vector<bool>& needed,
                          const std::vector<int64_t>& size) {
    auto has = [](const View<A>& v, int l) { return std::find(v.labels.begin(), v.labels.end(), l) != v.labels.end(); };
    std::vector<int> batch, m, k, n;
    for (int l : a.labels) {
      if (has(b, l)) (needed[size_t(l)] ? batch : k).push_back(l);
      else if (needed[size_t(l)]) m.push_back(l);
    }
    for (int l : b.labels) if (!has(a, l) && needed[size_t(l)]) n.push_back(l);
    auto cat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
      x.insert(x.end(), y.begin(), y.end());
      x.insert(x.end(), z.begin(), z.end());
      return x;
    };
    View<A> a2 = reduce_permute(a, cat(batch, m, k), size);
    View<A> b2 = reduce_permute(b, cat(batch, k, n), size);
    auto prod = [&](const std::vector<int>& ls) { int64_t p = 1; for (int l : ls) p *= size[size_t(l)]; return p; };
    const int64_t NB = prod(batch), M = prod(m), K = prod(k), N = prod(n);
    View<A> c;
    c.labels = cat(batch, m, n);
    for (int l : c.labels) c.dims.push_back(size[size_t(l)]);
    c.strides.assign(c.dims.size(), 1);
    for (int d = int(c.dims.size()) - 2; d >= 0; --d) c.strides[size_t(d)] = c.strides[size_t(d + 1)] * c.dims[size_t(d + 1)];
    c.own.assign(size_t(NB * M * N), A(0));
    const A* pa = a2.data;
    const A* pb = b2.data;
    A* pc = c.own.data();
    parallel_for(NB * M, K * N + 1, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        int64_t bi = r / std::max<int64_t>(M, 1);
        const A* arow = pa + r * K;
        const A* bm = pb + bi * K * N;
        A* crow = pc + r * N;
        if (N == 1) {
          A acc = 0;
          for (int64_t kk = 0; kk < K; ++kk) acc += arow[kk] * bm[kk];
          crow[0] = acc;
          continue;
        }
        for (int64_t kk = 0; kk < K; ++kk) {
          const A av = arow[kk];
          const A* brow = bm + kk * N;
          for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
        }
      }
    });
    c.data = c.own.data();
    return c;
  }

  template <class T, class A>
  void run(ComputeContext& ctx, const Layout& lay, Tensor& y) const {
    const int n_in = ctx.num_inputs();
    std::vector<View<A>> views(static_cast<size_t>(n_in));
    for (int i = 0; i < n_in; ++i) {
      const Tensor& t = ctx.input(i);
      View<A>& v = views[size_t(i)];
      v.own.resize(size_t(t.numel()));
      const T* p = t.data<T>();
      for (int64_t j = 0; j < t.numel(); ++j) v.own[size_t(j)] = A(p[j]);
      v.data = v.own.data();
      // Merge repeated labels (diagonals); broadcast ellipsis dims get stride 0.
      Shape s = t.shape();
      std::vector<int64_t> st(s.size(), 1);
      for (int d = int(s.size()) - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d + 1)] * s[size_t(d + 1)];
      const std::vector<int>& L = lay.labels[size_t(i)];
      for (size_t d = 0; d < L.size(); ++d) {
        int64_t stride = (s[d] == 1 && lay.size[size_t(L[d])] != 1) ? 0 : st[d];
        auto it = std::find(v.labels.begin(), v.labels.end(), L[d]);
        if (it != v.labels.end()) {
          v.strides[size_t(it - v.labels.begin())] += stride;
        } else {
          v.labels.push_back(L[d]);
          v.dims.push_back(lay.size[size_t(L[d])]);
          v.strides.push_back(stride);
        }
      }
    }
    View<A> cur = std::move(views[0]);
    cur.data = cur.own.data();
    for (int i = 1; i < n_in; ++i) {
      std::vector<bool> needed(kMaxLabels, false);
      for (int l : lay.out_labels) needed[size_t(l)] = true;
      for (int j = i + 1; j < n_in; ++j) for (int l : views[size_t(j)].labels) needed[size_t(l)] = true;
      cur = contract(cur, views[size_t(i)], needed, lay.size);
      cur.data = cur.own.data();
    }
    View<A> res = reduce_permute(cur, lay.out_labels, lay.size);
    T* py = y.data<T>();
    for (int64_t j = 0; j < y.numel(); ++j) py[j] = T(res.own[size_t(j)]);
  }

  std::string equation_;
  bool explicit_ = false;
  std::vector<std::vector<int>> inputs_;
  std::vector<int> output_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Einsum, EinsumKernel);

}  // namespace ingot
