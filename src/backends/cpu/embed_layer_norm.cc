// ingot.EmbedLayerNorm (made by the fuse_embed_layer_norm pass): a transformer's embedding
// lookups, their sum and the LayerNorm after it, in one pass over each output row.
//
// Contract (domain "ingot", version 1):
//   inputs   0 gamma [H] (or [1])    1 beta [H] (optional)
//            then 2 or 3 lookups, each a pair: table_i [V_i, H] (one float dtype for all),
//            ids_i (int32/int64; negative ids count from the end, as Gather's)
//   attrs    epsilon (float, default 1e-5); x_terms (int): the first x_terms lookups form X, the
//            others form skip — the grouping of the unfused graph, Add(X terms) + Add(skip terms)
//   outputs  0 Y = LayerNorm(s) over the last axis, shape broadcast(ids shapes) + [H]
//            1 s (optional) = X + skip; every addition rounds to the tables' dtype, as the
//              unfused Adds stored their results
// An id outside [-V, V) is an error naming the input and the id.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/float_kernel_util.h"
#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

constexpr int kGamma = 0, kBeta = 1, kFirstLookup = 2;

// Offsets of one ids tensor for each row of the broadcast ids shape.
struct IdsIndexer {
  std::vector<int64_t> out_dims, strides;  // strides 0 on broadcast dims
  IdsIndexer(const Shape& ids, const Shape& out) : out_dims(out), strides(out.size(), 0) {
    int64_t s = 1;
    for (size_t k = 0; k < ids.size(); ++k) {
      size_t d = ids.size() - 1 - k, o = out.size() - 1 - k;
      strides[o] = ids[d] == 1 ? 0 : s;
      s *= ids[d];
    }
  }
  int64_t offset(int64_t row) const {
    int64_t off = 0;
    for (size_t d = out_dims.size(); d-- > 0;) {
      off += (row % out_dims[d]) * strides[d];
      row /= out_dims[d];
    }
    return off;
  }
};

class EmbedLayerNormKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    epsilon_ = node.attrs.get_float("epsilon", 1e-5f);
    if (!(epsilon_ >= 0)) return invalid_model("attribute epsilon is " + std::to_string(epsilon_) + "; expected >= 0");
    const int lookups = (int(node.inputs.size()) - kFirstLookup) / 2;
    if (node.inputs.size() < size_t(kFirstLookup + 4) || (node.inputs.size() - kFirstLookup) % 2 != 0 || lookups > 3)
      return invalid_model("expects gamma, beta and 2 or 3 (table, ids) pairs; got " + std::to_string(node.inputs.size()) + " inputs");
    x_terms_ = int(node.attrs.get_int("x_terms", 1));
    if (x_terms_ < 1 || x_terms_ >= lookups)
      return invalid_model("attribute x_terms is " + std::to_string(x_terms_) + "; expected 1.." + std::to_string(lookups - 1));
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    const int lookups = (ctx.num_inputs() - kFirstLookup) / 2;
    if (!ctx.has_input(kGamma)) return invalid_model("needs input 0 (gamma)");
    DType t = DType::kUndefined;
    int64_t h = -1;
    std::vector<Shape> id_shapes;
    for (int l = 0; l < lookups; ++l) {
      const int ti = kFirstLookup + 2 * l, ii = ti + 1;
      if (!ctx.has_input(ti) || !ctx.has_input(ii)) return invalid_model("lookup " + std::to_string(l) + " needs a table and ids");
      const Shape& ts = ctx.input_shape(ti);
      if (ts.size() != 2) return invalid_argument("input " + std::to_string(ti) + " (table) has shape " + shape_str(ts) + "; expected [V, H]");
      if (!dtype_is_float(ctx.input_dtype(ti))) return unsupported("input " + std::to_string(ti) + " (table) has dtype " + dtype_name(ctx.input_dtype(ti)));
      if (t == DType::kUndefined) t = ctx.input_dtype(ti), h = ts[1];
      if (ctx.input_dtype(ti) != t || ts[1] != h)
        return invalid_argument("input " + std::to_string(ti) + " (table) is " + dtype_name(ctx.input_dtype(ti)) + " " + shape_str(ts) +
                                "; the first table is " + dtype_name(t) + " with width " + std::to_string(h));
      DType it = ctx.input_dtype(ii);
      if (it != DType::kInt64 && it != DType::kInt32)
        return invalid_argument("input " + std::to_string(ii) + " (ids) has dtype " + dtype_name(it) + "; expected int64 or int32");
      id_shapes.push_back(ctx.input_shape(ii));
    }
    for (int i : {kGamma, kBeta}) {
      if (!ctx.has_input(i)) continue;
      int64_t n = shape_numel(ctx.input_shape(i));
      if (!dtype_is_float(ctx.input_dtype(i)) || ctx.input_rank(i) > 1 || (n != h && n != 1))
        return invalid_argument("input " + std::to_string(i) + " has shape " + shape_str(ctx.input_shape(i)) + ", expected [" + std::to_string(h) + "]");
    }
    auto rows = broadcast_shapes(id_shapes);
    if (!rows) {
      // Typically a sequence longer than the model's positions: the position ids are a slice of
      // a constant table (clamped to its length), the token ids are as long as the input.
      std::string list;
      for (int l = 0; l < lookups; ++l)
        list += (l ? ", " : "") + shape_str(id_shapes[size_t(l)]) + " (lookup " + std::to_string(l) + ", a table of " +
                std::to_string(ctx.input_shape(kFirstLookup + 2 * l)[0]) + " rows)";
      return invalid_argument("the lookups' ids have shapes that do not broadcast together: " + list +
                              "; a sequence longer than the model's table of positions does this");
    }
    Shape out = *rows;
    out.push_back(h);
    ctx.set_output(0, t, out);
    if (ctx.has_output(1)) ctx.set_output(1, t, out);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    Tensor& y = ctx.output(0);
    const int64_t h = y.shape().back();
    const int64_t rows = h ? y.numel() / h : 0;
    if (rows == 0) return Status::ok();
    const Shape row_shape(y.shape().begin(), y.shape().end() - 1);
    const int lookups = (ctx.num_inputs() - kFirstLookup) / 2;
    std::vector<const Tensor*> tables, ids;
    std::vector<IdsIndexer> index;
    for (int l = 0; l < lookups; ++l) {
      tables.push_back(&ctx.input(kFirstLookup + 2 * l));
      ids.push_back(&ctx.input(kFirstLookup + 2 * l + 1));
      index.emplace_back(ids.back()->shape(), row_shape);
    }
    // Every id is checked before any row is written.
    for (int l = 0; l < lookups; ++l) {
      const int64_t v = tables[size_t(l)]->dim(0);
      for (int64_t k = 0; k < ids[size_t(l)]->numel(); ++k) {
        int64_t id = ids[size_t(l)]->scalar_as_int(k);
        if (id < -v || id >= v)
          return invalid_argument("input " + std::to_string(kFirstLookup + 2 * l + 1) + " (ids) holds " + std::to_string(id) +
                                  " at position " + std::to_string(k) + ", outside the table's " + std::to_string(v) + " rows");
      }
    }
    std::vector<double> gamma = cpu::to_doubles(ctx.input(kGamma));
    std::vector<double> beta = ctx.has_input(kBeta) ? cpu::to_doubles(ctx.input(kBeta)) : std::vector<double>{0.0};
    Tensor* sum = ctx.has_output(1) ? &ctx.output(1) : nullptr;
    dispatch_float(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = cpu::AccOf<T>;
      auto through = [](A v) { return A(T(v)); };  // storage rounding of the unfused graph
      parallel_for(rows, h * 8, [&](int64_t b, int64_t e) {
        std::vector<const T*> src(static_cast<size_t>(lookups));
        std::vector<A> s(static_cast<size_t>(h));
        for (int64_t r = b; r < e; ++r) {
          for (int l = 0; l < lookups; ++l) {
            int64_t id = ids[size_t(l)]->scalar_as_int(index[size_t(l)].offset(r));
            if (id < 0) id += tables[size_t(l)]->dim(0);
            src[size_t(l)] = tables[size_t(l)]->data<T>() + id * h;
          }
          double mean = 0;
          for (int64_t k = 0; k < h; ++k) {
            A x = A(src[0][k]), skip = A(src[size_t(x_terms_)][k]);
            for (int l = 1; l < x_terms_; ++l) x = through(x + A(src[size_t(l)][k]));
            for (int l = x_terms_ + 1; l < lookups; ++l) skip = through(skip + A(src[size_t(l)][k]));
            s[size_t(k)] = through(x + skip);
            mean += double(s[size_t(k)]);
          }
          mean /= double(h);
          double var = 0;
          for (int64_t k = 0; k < h; ++k) var += (double(s[size_t(k)]) - mean) * (double(s[size_t(k)]) - mean);
          const double inv = 1.0 / std::sqrt(var / double(h) + double(epsilon_));
          T* yr = y.data<T>() + r * h;
          for (int64_t k = 0; k < h; ++k) {
            double g = gamma[gamma.size() == 1 ? 0 : size_t(k)], bb = beta[beta.size() == 1 ? 0 : size_t(k)];
            yr[k] = T(A((double(s[size_t(k)]) - mean) * inv * g + bb));
          }
          if (sum)
            for (int64_t k = 0; k < h; ++k) sum->data<T>()[r * h + k] = T(s[size_t(k)]);
        }
      });
    });
    return Status::ok();
  }

 private:
  float epsilon_ = 1e-5f;
  int x_terms_ = 1;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "ingot", EmbedLayerNorm, EmbedLayerNormKernel);

}  // namespace ingot
