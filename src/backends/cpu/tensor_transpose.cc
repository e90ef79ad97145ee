// Transpose, DepthToSpace, SpaceToDepth, and the shared copy loops: strided_copy (used by
// Slice and Expand too) and permute_copy (a blocked transpose of merged dimensions); and the
// DepthToSpace/SpaceToDepth view (strided_views.h), which the CUDA kernel reads too.
#include "backends/cpu/tensor_util.h"
#include "backends/cpu/strided_views.h"

namespace ingot {
namespace tensor_ops {
namespace {

DType dtype_for_size(size_t esize) {
  switch (esize) {
    case 1: return DType::kUInt8;
    case 2: return DType::kUInt16;
    case 4: return DType::kUInt32;
    default: return DType::kUInt64;
  }
}

// Drops size-1 dims and merges dims i, i+1 whose strides make them one run.
void merge_dims(Shape& d, std::vector<int64_t>& s) {
  Shape nd;
  std::vector<int64_t> ns;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == 1) continue;
    if (!nd.empty() && ns.back() == s[i] * d[i]) {
      nd.back() *= d[i];
      ns.back() = s[i];
    } else {
      nd.push_back(d[i]);
      ns.push_back(s[i]);
    }
  }
  d = std::move(nd);
  s = std::move(ns);
}

}  // namespace

void strided_copy(const void* in, const Shape& out_shape, const std::vector<int64_t>& in_strides, size_t esize,
                  void* out) {
  for (int64_t x : out_shape)
    if (x == 0) return;
  Shape d = out_shape;
  std::vector<int64_t> s = in_strides;
  merge_dims(d, s);
  const uint8_t* src = static_cast<const uint8_t*>(in);
  uint8_t* dst = static_cast<uint8_t*>(out);
  if (d.empty()) {
    std::memcpy(dst, src, esize);
    return;
  }
  const int r = int(d.size());
  const int64_t inner = d.back(), si = s.back();
  const int64_t outer = prod(d, 0, size_t(r - 1));
  dispatch_by_size(dtype_for_size(esize), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* ip = reinterpret_cast<const T*>(src);
    T* op = reinterpret_cast<T*>(dst);
    parallel_for(outer, inner, [&](int64_t b, int64_t e) {
      // odometer over the outer dims starting at row b
      std::vector<int64_t> idx(size_t(r), 0);
      int64_t off = 0, rem = b;
      for (int k = r - 2; k >= 0; --k) {
        idx[size_t(k)] = rem % d[size_t(k)];
        rem /= d[size_t(k)];
        off += idx[size_t(k)] * s[size_t(k)];
      }
      for (int64_t row = b; row < e; ++row) {
        T* o = op + row * inner;
        const T* p = ip + off;
        if (si == 1) {
          std::memcpy(o, p, size_t(inner) * sizeof(T));
        } else if (si == 0) {
          std::fill(o, o + inner, *p);
        } else {
          for (int64_t j = 0; j < inner; ++j) o[j] = p[j * si];
        }
        for (int k = r - 2; k >= 0; --k) {
          off += s[size_t(k)];
          if (++idx[size_t(k)] < d[size_t(k)]) break;
          off -= s[size_t(k)] * d[size_t(k)];
          idx[size_t(k)] = 0;
        }
      }
    });
  });
}

void permute_copy(const void* in, const Shape& in_shape, const std::vector<int>& perm, size_t esize, void* out) {
  auto ist = strides_of(in_shape);
  Shape d;
  std::vector<int64_t> s;
  for (int p : perm) {
    d.push_back(in_shape[size_t(p)]);
    s.push_back(ist[size_t(p)]);
  }
  for (int64_t x : d)
    if (x == 0) return;
  Shape md = d;
  std::vector<int64_t> ms = s;
  merge_dims(md, ms);
  if (md.empty() || ms.back() == 1) {  // contiguous inner runs
    strided_copy(in, d, s, esize, out);
    return;
  }
  const int r = int(md.size());
  const int L = r - 1;
  int J = -1;
  for (int k = 0; k < r; ++k)
    if (ms[size_t(k)] == 1) J = k;
  if (J < 0) {  // cannot happen for a permutation, but stay correct
    strided_copy(in, d, s, esize, out);
    return;
  }
  auto ost = strides_of(md);
  std::vector<int> others;
  for (int k = 0; k < r; ++k)
    if (k != J && k != L) others.push_back(k);
  int64_t outer = 1;
  for (int k : others) outer *= md[size_t(k)];
  constexpr int64_t B = 32;
  const int64_t nJ = md[size_t(J)], nL = md[size_t(L)], sL = ms[size_t(L)], oJ = ost[size_t(J)];
  const int64_t nbJ = (nJ + B - 1) / B;
  dispatch_by_size(dtype_for_size(esize), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* ip = static_cast<const T*>(in);
    T* op = static_cast<T*>(out);
    parallel_for(outer * nbJ, B * nL, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        int64_t o = w / nbJ, jb = w % nbJ;
        int64_t in_off = 0, out_off = 0;
        for (int q = int(others.size()) - 1; q >= 0; --q) {
          int k = others[size_t(q)];
          int64_t x = o % md[size_t(k)];
          o /= md[size_t(k)];
          in_off += x * ms[size_t(k)];
          out_off += x * ost[size_t(k)];
        }
        int64_t j0 = jb * B, j1 = std::min(nJ, j0 + B);
        for (int64_t l0 = 0; l0 < nL; l0 += B) {
          int64_t l1 = std::min(nL, l0 + B);
          for (int64_t j = j0; j < j1; ++j) {
            T* orow = op + out_off + j * oJ;
            const T* irow = ip + in_off + j;
            for (int64_t l = l0; l < l1; ++l) orow[l] = irow[l * sL];
          }
        }
      }
    });
  });
}

SpaceDepthView space_depth_view(const Shape& in, int64_t b, bool to_space, bool crd) {
  const int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  if (!to_space) return {{n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}};
  const int64_t c2 = c / (b * b);
  if (crd) return {{n, c2, b, b, h, w}, {0, 1, 4, 2, 5, 3}};
  return {{n, b, b, c2, h, w}, {0, 3, 4, 1, 5, 2}};
}

namespace {

class TransposeKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    has_perm_ = node.attrs.has("perm");
    perm_ = node.attrs.get_ints("perm");
    return Status::ok();
  }
  Expected<std::vector<int>> perm_for(int rank) const {
    std::vector<int> p;
    if (!has_perm_) {
      for (int i = rank - 1; i >= 0; --i) p.push_back(i);
      return p;
    }
    if (int(perm_.size()) != rank)
      return invalid_argument("perm " + ints_str(perm_) + " has " + std::to_string(perm_.size()) +
                              " entries but the input has rank " + std::to_string(rank));
    std::vector<bool> seen(size_t(rank), false);
    for (int64_t v : perm_) {
      if (v < 0 || v >= rank || seen[size_t(v)])
        return invalid_argument("perm " + ints_str(perm_) + " is not a permutation of 0.." + std::to_string(rank - 1));
      seen[size_t(v)] = true;
      p.push_back(int(v));
    }
    return p;
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    INGOT_ASSIGN_OR_RETURN(auto p, perm_for(ctx.input_rank(0)));
    Shape out;
    for (int k : p) out.push_back(ctx.input_shape(0)[size_t(k)]);
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(auto p, perm_for(x.rank()));
    Shape out_shape;
    for (int k : p) out_shape.push_back(x.dim(k));
    // When the dims larger than 1 keep their order the bytes do not move: alias.
    int last = -1;
    bool same_order = true;
    for (int k : p) {
      if (x.dim(k) == 1) continue;
      if (k < last) same_order = false;
      last = k;
    }
    if (same_order) {
      ctx.set_output(0, x.reshaped(out_shape));
      return Status::ok();
    }
    Tensor& y = ctx.output(0);
    permute_copy(x.raw(), x.shape(), p, dtype_size(x.dtype()), y.raw());
    return Status::ok();
  }

 private:
  bool has_perm_ = false;
  std::vector<int64_t> perm_;
};

// DepthToSpace (to_space = true) and SpaceToDepth: a reshape to 6-D, a transpose, a reshape.
class SpaceDepthKernel : public OpKernel {
 public:
  explicit SpaceDepthKernel(bool to_space) : to_space_(to_space) {}
  Status init(const Node& node, int opset) override {
    if (!node.attrs.has("blocksize")) return invalid_model("attribute 'blocksize' is required");
    b_ = node.attrs.get_int("blocksize", 0);
    if (b_ <= 0) return invalid_model("blocksize must be positive, got " + std::to_string(b_));
    std::string mode = node.attrs.get_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") return invalid_model("mode must be DCR or CRD, got '" + mode + "'");
    crd_ = to_space_ && mode == "CRD";
    return Status::ok();
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, 1, 1));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "input"));
    const Shape& s = ctx.input_shape(0);
    if (s.size() != 4) return invalid_argument("input must be 4-D (NCHW), got shape " + shape_str(s));
    if (to_space_) {
      if (s[1] % (b_ * b_) != 0)
        return invalid_argument("channels " + std::to_string(s[1]) + " are not divisible by blocksize^2 = " +
                                std::to_string(b_ * b_));
      ctx.set_output(0, ctx.input_dtype(0), {s[0], s[1] / (b_ * b_), s[2] * b_, s[3] * b_});
    } else {
      if (s[2] % b_ != 0 || s[3] % b_ != 0)
        return invalid_argument("height " + std::to_string(s[2]) + " and width " + std::to_string(s[3]) +
                                " must be divisible by blocksize " + std::to_string(b_));
      ctx.set_output(0, ctx.input_dtype(0), {s[0], s[1] * b_ * b_, s[2] / b_, s[3] / b_});
    }
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const SpaceDepthView v = space_depth_view(x.shape(), b_, to_space_, crd_);
    permute_copy(x.raw(), v.shape6, v.perm, dtype_size(x.dtype()), ctx.output(0).raw());
    return Status::ok();
  }

 private:
  bool to_space_;
  bool crd_ = false;
  int64_t b_ = 0;
};

class DepthToSpaceKernel : public SpaceDepthKernel {
 public:
  DepthToSpaceKernel() : SpaceDepthKernel(true) {}
};
class SpaceToDepthKernel : public SpaceDepthKernel {
 public:
  SpaceToDepthKernel() : SpaceDepthKernel(false) {}
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Transpose, tensor_ops::TransposeKernel);
INGOT_REGISTER_KERNEL(cpu, "", DepthToSpace, tensor_ops::DepthToSpaceKernel);
INGOT_REGISTER_KERNEL(cpu, "", SpaceToDepth, tensor_ops::SpaceToDepthKernel);

}  // namespace ingot
