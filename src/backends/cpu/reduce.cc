// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare.
// The input shape is collapsed into runs of reduced and kept axes. When the innermost run is
// reduced, each output reduces contiguous segments (multi-lane accumulators); when it is kept,
// whole rows are accumulated into the output (vectorisable). Half types accumulate in float,
// integers in int64/uint64 (or double for Mean/L2/LogSum/LogSumExp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/dispatch.h"
#include "ir/shape_util.h"
#include "runtime/kernel.h"
#include "runtime/parallel.h"

namespace ingot {
namespace {

enum class RKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// The collapsed iteration space of a reduction.
struct Plan {
  Shape out_shape;                   // as the op reports it (keepdims applied)
  int64_t num_out = 1;               // elements in the output
  int64_t count = 1;                 // elements reduced into each output
  bool inner_reduced = false;        // innermost run is reduced
  int64_t inner = 1;                 // size of the innermost run
  std::vector<int64_t> kept_dims;    // kept runs (outer to inner), excluding innermost if kept
  std::vector<int64_t> kept_strides; // input strides of those runs
  std::vector<int64_t> red_offsets;  // input offsets of every reduced index (excluding innermost if reduced)
};

Expected<Plan> make_plan(const Shape& in, std::vector<int64_t> axes, bool keepdims, bool noop) {
  const int rank = int(in.size());
  std::vector<bool> red(size_t(rank), false);
  if (axes.empty()) {
    if (!noop) std::fill(red.begin(), red.end(), true);
  } else {
    for (int64_t a : axes) {
      if (a < -rank || a >= rank)
        return invalid_argument("axes value " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
      int ax = int(a < 0 ? a + rank : a);
      if (red[size_t(ax)]) return invalid_argument("axes value " + std::to_string(a) + " is repeated");
      red[size_t(ax)] = true;
    }
  }
  Plan p;
  for (int i = 0; i < rank; ++i) {
    if (!red[size_t(i)]) p.out_shape.push_back(in[size_t(i)]);
    else if (keepdims) p.out_shape.push_back(1);
  }
  p.num_out = shape_numel(p.out_shape);
  // Collapse: runs of equal flag, skipping size-1 axes.
  std::vector<int64_t> dims;
  std::vector<bool> flags;
  for (int i = 0; i < rank; ++i) {
    if (in[size_t(i)] == 1) continue;
    if (!flags.empty() && flags.back() == red[size_t(i)]) dims.back() *= in[size_t(i)];
    else { dims.push_back(in[size_t(i)]); flags.push_back(red[size_t(i)]); }
  }
  if (dims.empty()) { dims.push_back(1); flags.push_back(false); }
  const int m = int(dims.size());
  std::vector<int64_t> strides(size_t(m), 1);
  for (int i = m - 2; i >= 0; --i) strides[size_t(i)] = strides[size_t(i + 1)] * dims[size_t(i + 1)];
  p.inner_reduced = flags.back();
  p.inner = dims.back();
  p.count = 1;
  for (int i = 0; i < m; ++i) if (flags[size_t(i)]) p.count *= dims[size_t(i)];
  std::vector<int64_t> rdims, rstrides;
  for (int i = 0; i < m - 1; ++i) {
    if (flags[size_t(i)]) { rdims.push_back(dims[size_t(i)]); rstrides.push_back(strides[size_t(i)]); }
    else { p.kept_dims.push_back(dims[size_t(i)]); p.kept_strides.push_back(strides[size_t(i)]); }
  }
  int64_t nred = 1;
  for (int64_t d : rdims) nred *= d;
  p.red_offsets.resize(size_t(nred));
  for (int64_t r = 0; r < nred; ++r) {
    int64_t rem = r, off = 0;
    for (int k = int(rdims.size()) - 1; k >= 0; --k) {
      off += (rem % rdims[size_t(k)]) * rstrides[size_t(k)];
      rem /= rdims[size_t(k)];
    }
    p.red_offsets[size_t(r)] = off;
  }
  return p;
}

// Input offset of the kept-outer index `o`.
inline int64_t kept_base(const Plan& p, int64_t o) {
  int64_t off = 0;
  for (int k = int(p.kept_dims.size()) - 1; k >= 0; --k) {
    off += (o % p.kept_dims[size_t(k)]) * p.kept_strides[size_t(k)];
    o /= p.kept_dims[size_t(k)];
  }
  return off;
}

// Generic driver. Op provides: A init(); void upd(A& acc, A x, int64_t out_index);
// A comb(A, A). Results (raw accumulators) go to acc_out[num_out].
template <class T, class A, class Op>
void run_reduce(const Plan& p, const T* in, A* acc_out, const Op& op) {
  const int64_t inner = p.inner;
  const std::vector<int64_t>& ro = p.red_offsets;
  if (p.inner_reduced) {
    parallel_for(p.num_out, p.count, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const int64_t base = kept_base(p, o);
        constexpr int L = 8;
        A lane[L];
        for (int l = 0; l < L; ++l) lane[l] = op.init();
        A tail = op.init();
        for (int64_t r : ro) {
          const T* x = in + base + r;
          int64_t j = 0;
          for (; j + L <= inner; j += L)
            for (int l = 0; l < L; ++l) op.upd(lane[l], A(x[j + l]), o);
          for (; j < inner; ++j) op.upd(tail, A(x[j]), o);
        }
        A acc = tail;
        for (int l = 0; l < L; ++l) acc = op.comb(acc, lane[l]);
        acc_out[o] = acc;
      }
    });
  } else {
    const int64_t nouter = p.num_out / std::max<int64_t>(inner, 1);
    // Parallel over outer rows, or over column blocks when there is a single row.
    const int64_t cols_block = nouter >= 4 ? inner : std::max<int64_t>(256, (inner + 15) / 16);
    const int64_t nblocks = (inner + cols_block - 1) / std::max<int64_t>(cols_block, 1);
    parallel_for(nouter * nblocks, cols_block * int64_t(std::max<size_t>(ro.size(), 1)), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / nblocks, cb = (t % nblocks) * cols_block;
        const int64_t ce = std::min(inner, cb + cols_block);
        const int64_t base = kept_base(p, o);
        A* acc = acc_out + o * inner;
        for (int64_t j = cb; j < ce; ++j) acc[j] = op.init();
        for (int64_t r : ro) {
          const T* x = in + base + r;
          for (int64_t j = cb; j < ce; ++j) op.upd(acc[j], A(x[j]), o * inner + j);
        }
      }
    });
  }
}

template <class A> struct SumOp {
  A init() const { return A(0); }
  void upd(A& a, A x, int64_t) const { a += x; }
  A comb(A a, A b) const { return a + b; }
};
template <class A> struct AbsSumOp {
  A init() const { return A(0); }
  void upd(A& a, A x, int64_t) const {
    if constexpr (std::is_unsigned_v<A>) a += x; else a += (x < 0 ? -x : x);
  }
  A comb(A a, A b) const { return a + b; }
};
template <class A> struct SqSumOp {
  A init() const { return A(0); }
  void upd(A& a, A x, int64_t) const { a += x * x; }
  A comb(A a, A b) const { return a + b; }
};
template <class A> struct ProdOp {
  A init() const { return A(1); }
  void upd(A& a, A x, int64_t) const { a *= x; }
  A comb(A a, A b) const { return a * b; }
};
template <class A> struct MaxOp {
  A init() const {
    if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  void upd(A& a, A x, int64_t) const { a = ((x > a) | (x != x)) ? x : a; }  // a NaN sticks
  A comb(A a, A b) const { return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); }
};
template <class A> struct MinOp {
  A init() const {
    if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  void upd(A& a, A x, int64_t) const { a = ((x < a) | (x != x)) ? x : a; }
  A comb(A a, A b) const { return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); }
};
template <class A> struct ExpShiftSumOp {  // sum exp(x - m[o]) with m the per-output shift
  const A* m;
  A init() const { return A(0); }
  void upd(A& a, A x, int64_t o) const { a += A(std::exp(x - m[o])); }
  A comb(A a, A b) const { return a + b; }
};

template <class T> struct Acc {
  using type = std::conditional_t<std::is_same_v<T, double>, double,
               std::conditional_t<std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float,
               std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>;
};

template <class T>
void reduce_typed(RKind kind, const Plan& p, const Tensor& xin, Tensor& yout) {
  const T* in = xin.data<T>();
  T* out = yout.data<T>();
  const int64_t n = p.num_out;
  constexpr bool is_int = std::is_integral_v<T>;
  // Integer kinds that need real arithmetic use double.
  using AI = typename Acc<T>::type;
  using AF = std::conditional_t<is_int, double, AI>;
  auto store = [&](auto&& fn) { for (int64_t o = 0; o < n; ++o) out[o] = T(fn(o)); };
  switch (kind) {
    case RKind::kSum: case RKind::kL1: case RKind::kSumSquare: case RKind::kProd:
    case RKind::kMax: case RKind::kMin: {
      std::vector<AI> acc(static_cast<size_t>(n));
      if (kind == RKind::kSum) run_reduce<T, AI>(p, in, acc.data(), SumOp<AI>{});
      else if (kind == RKind::kL1) run_reduce<T, AI>(p, in, acc.data(), AbsSumOp<AI>{});
      else if (kind == RKind::kSumSquare) run_reduce<T, AI>(p, in, acc.data(), SqSumOp<AI>{});
      else if (kind == RKind::kProd) run_reduce<T, AI>(p, in, acc.data(), ProdOp<AI>{});
      else if (kind == RKind::kMax) {
        using AM = std::conditional_t<is_int, T, AI>;
        std::vector<AM> m(static_cast<size_t>(n));
        run_reduce<T, AM>(p, in, m.data(), MaxOp<AM>{});
        store([&](int64_t o) { return m[size_t(o)]; });
        return;
      } else {
        using AM = std::conditional_t<is_int, T, AI>;
        std::vector<AM> m(static_cast<size_t>(n));
        run_reduce<T, AM>(p, in, m.data(), MinOp<AM>{});
        store([&](int64_t o) { return m[size_t(o)]; });
        return;
      }
      store([&](int64_t o) { return acc[size_t(o)]; });
      return;
    }
    case RKind::kMean: {
      std::vector<AF> acc(static_cast<size_t>(n));
      run_reduce<T, AF>(p, in, acc.data(), SumOp<AF>{});
      store([&](int64_t o) { return AF(acc[size_t(o)] / AF(p.count)); });
      return;
    }
    case RKind::kL2: {
      std::vector<AF> acc(static_cast<size_t>(n));
      run_reduce<T, AF>(p, in, acc.data(), SqSumOp<AF>{});
      store([&](int64_t o) { return AF(std::sqrt(acc[size_t(o)])); });
      return;
    }
    case RKind::kLogSum: {
      std::vector<AF> acc(static_cast<size_t>(n));
      run_reduce<T, AF>(p, in, acc.data(), SumOp<AF>{});
      store([&](int64_t o) { return AF(std::log(acc[size_t(o)])); });
      return;
    }
    case RKind::kLogSumExp: {
      std::vector<AF> m(static_cast<size_t>(n)), acc(static_cast<size_t>(n));
      run_reduce<T, AF>(p, in, m.data(), MaxOp<AF>{});
      for (auto& v : m) if (!std::isfinite(double(v))) v = AF(0);  // all -inf, +inf or NaN: no shift
      run_reduce<T, AF>(p, in, acc.data(), ExpShiftSumOp<AF>{m.data()});
      store([&](int64_t o) {
        return AF(std::log(acc[size_t(o)]) + m[size_t(o)]);
      });
      return;
    }
  }
}

template <RKind K>
class ReduceKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    keepdims_ = node.attrs.get_int("keepdims", 1) != 0;
    const int axes_input_opset = (K == RKind::kSum) ? 13 : 18;
    axes_as_input_ = opset >= axes_input_opset;
    if (!axes_as_input_) {
      axes_ = node.attrs.get_ints("axes");
    } else {
      if (node.attrs.has("axes"))
        return invalid_model("attribute 'axes' is not allowed from opset " + std::to_string(axes_input_opset) +
                             "; axes is an input");
      noop_ = node.attrs.get_int("noop_with_empty_axes", 0) != 0;
    }
    return Status::ok();
  }

  Status check_dtype(DType t) const {
    bool ok = dtype_is_float(t) || t == DType::kInt32 || t == DType::kInt64 || t == DType::kUInt32 ||
              t == DType::kUInt64;
    if (K == RKind::kMax || K == RKind::kMin)
      ok = ok || t == DType::kInt8 || t == DType::kUInt8 || t == DType::kInt16 || t == DType::kUInt16 ||
           t == DType::kBool;
    if (!ok) return unsupported("input dtype " + dtype_name(t) + " is not supported");
    return Status::ok();
  }

  Expected<std::vector<int64_t>> axes_from(const Tensor* t) const {
    if (t->dtype() != DType::kInt64) return invalid_argument("input 'axes' must be int64, got " + dtype_name(t->dtype()));
    if (t->rank() > 1) return invalid_argument("input 'axes' must be 1-D, got rank " + std::to_string(t->rank()));
    return t->to_int_vector();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    INGOT_RETURN_IF_ERROR(check_dtype(ctx.input_dtype(0)));
    std::vector<int64_t> axes = axes_;
    if (axes_as_input_ && ctx.has_input(1)) {
      const Tensor* a = ctx.input_value(1);
      if (!a) {
        if (ctx.input_dtype(1) != DType::kInt64)
          return invalid_argument("input 'axes' must be int64, got " + dtype_name(ctx.input_dtype(1)));
        ctx.set_output_dynamic(0, ctx.input_dtype(0));
        return Status::ok();
      }
      INGOT_ASSIGN_OR_RETURN(axes, axes_from(a));
    }
    INGOT_ASSIGN_OR_RETURN(Plan p, make_plan(ctx.input_shape(0), axes, keepdims_, noop_));
    ctx.set_output(0, ctx.input_dtype(0), p.out_shape);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes = axes_;
    if (axes_as_input_ && ctx.has_input(1)) { INGOT_ASSIGN_OR_RETURN(axes, axes_from(&ctx.input(1))); }
    if (axes.empty() && noop_) {
      ctx.set_output(0, x);
      return Status::ok();
    }
    INGOT_ASSIGN_OR_RETURN(Plan p, make_plan(x.shape(), axes, keepdims_, noop_));
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out_shape);
    if (y.numel() == 0) return Status::ok();
    bool ok = dispatch_float(x.dtype(), [&](auto tag) { reduce_typed<typename decltype(tag)::type>(K, p, x, y); });
    if (!ok) {
      switch (x.dtype()) {
        case DType::kInt32: reduce_typed<int32_t>(K, p, x, y); break;
        case DType::kInt64: reduce_typed<int64_t>(K, p, x, y); break;
        case DType::kUInt32: reduce_typed<uint32_t>(K, p, x, y); break;
        case DType::kUInt64: reduce_typed<uint64_t>(K, p, x, y); break;
        case DType::kInt8: reduce_typed<int8_t>(K, p, x, y); break;
        case DType::kUInt8: reduce_typed<uint8_t>(K, p, x, y); break;
        case DType::kInt16: reduce_typed<int16_t>(K, p, x, y); break;
        case DType::kUInt16: reduce_typed<uint16_t>(K, p, x, y); break;
        case DType::kBool: {  // Max = any, Min = all; bytes are 0/1
          reduce_typed<uint8_t>(K, p, x, y);
          uint8_t* b = y.data<uint8_t>();
          for (int64_t i = 0; i < y.numel(); ++i) b[i] = b[i] != 0;
          break;
        }
        default: return unsupported("input dtype " + dtype_name(x.dtype()) + " is not supported");
      }
    }
    return Status::ok();
  }

 private:
  bool keepdims_ = true;
  bool axes_as_input_ = false;
  bool noop_ = false;
  std::vector<int64_t> axes_;
};

using ReduceSumKernel = ReduceKernel<RKind::kSum>;
using ReduceMeanKernel = ReduceKernel<RKind::kMean>;
using ReduceMaxKernel = ReduceKernel<RKind::kMax>;
using ReduceMinKernel = ReduceKernel<RKind::kMin>;
using ReduceProdKernel = ReduceKernel<RKind::kProd>;
using ReduceL1Kernel = ReduceKernel<RKind::kL1>;
using ReduceL2Kernel = ReduceKernel<RKind::kL2>;
using ReduceLogSumKernel = ReduceKernel<RKind::kLogSum>;
using ReduceLogSumExpKernel = ReduceKernel<RKind::kLogSumExp>;
using ReduceSumSquareKernel = ReduceKernel<RKind::kSumSquare>;

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", ReduceSum, ReduceSumKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceMean, ReduceMeanKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceMax, ReduceMaxKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceMin, ReduceMinKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceProd, ReduceProdKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceL1, ReduceL1Kernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceL2, ReduceL2Kernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceLogSum, ReduceLogSumKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceLogSumExp, ReduceLogSumExpKernel);
INGOT_REGISTER_KERNEL(cpu, "", ReduceSumSquare, ReduceSumSquareKernel);

}  // namespace ingot
