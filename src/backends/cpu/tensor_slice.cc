// Slice, CenterCropPad, Expand, Tile and Pad: ops that read a strided or repeated view of their
// input; and Slice's view itself (strided_views.h), which the CUDA Slice kernel reads too.
#include <limits>

#include "backends/cpu/tensor_util.h"
#include "backends/cpu/strided_views.h"

namespace ingot {
namespace tensor_ops {

Expected<SliceView> slice_view(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                               const std::vector<int64_t>* axes_in, const std::vector<int64_t>* steps_in) {
  const int r = int(in.size());
  const size_t n = starts.size();
  if (ends.size() != n)
    return invalid_argument("starts " + ints_str(starts) + " and ends " + ints_str(ends) + " differ in length");
  std::vector<int64_t> axes, steps;
  if (axes_in) {
    axes = *axes_in;
    if (axes.size() != n) return invalid_argument("axes " + ints_str(axes) + " and starts " + ints_str(starts) + " differ in length");
  } else {
    for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
  }
  if (steps_in) {
    steps = *steps_in;
    if (steps.size() != n) return invalid_argument("steps " + ints_str(steps) + " and starts " + ints_str(starts) + " differ in length");
  } else {
    steps.assign(n, 1);
  }
  SliceView p;
  p.out = in;
  p.start.assign(size_t(r), 0);
  p.step.assign(size_t(r), 1);
  std::vector<bool> seen(size_t(r), false);
  for (size_t i = 0; i < n; ++i) {
    INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axes[i], r, "axes entry"));
    if (seen[size_t(a)]) return invalid_argument("axes " + ints_str(axes) + " has a repeated axis");
    seen[size_t(a)] = true;
    int64_t d = in[size_t(a)], st = steps[i];
    if (st == 0) return invalid_argument("steps " + ints_str(steps) + " has a 0 step");
    st = std::clamp<int64_t>(st, -(d + 1), d + 1);  // larger steps take one element, like d + 1
    if (st == 0) st = 1;
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s = s < -d ? -1 : s + d;  // avoid overflow with INT64_MIN
    if (e < 0) e = e < -d ? -1 : e + d;
    int64_t len;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      len = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      len = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    if (d == 0) len = 0;
    p.out[size_t(a)] = len;
    p.start[size_t(a)] = len ? s : 0;
    p.step[size_t(a)] = st;
  }
  return p;
}

Status SliceParams::init(const Node& node, int opset) {
  from_attr_ = opset < 10;
  if (from_attr_) {
    if (!node.attrs.has("starts") || !node.attrs.has("ends")) return invalid_model("attributes 'starts' and 'ends' are required");
    starts_ = node.attrs.get_ints("starts");
    ends_ = node.attrs.get_ints("ends");
    has_axes_ = node.attrs.has("axes");
    axes_ = node.attrs.get_ints("axes");
  }
  return Status::ok();
}

Expected<SliceView> SliceParams::view(const Shape& in, const Tensor* const* v) const {
  if (from_attr_) return slice_view(in, starts_, ends_, has_axes_ ? &axes_ : nullptr, nullptr);
  INGOT_ASSIGN_OR_RETURN(auto s, read_int_list(*v[1], 1, "starts"));
  INGOT_ASSIGN_OR_RETURN(auto e, read_int_list(*v[2], 2, "ends"));
  std::vector<int64_t> axes, steps;
  if (v[3]) {
    INGOT_ASSIGN_OR_RETURN(axes, read_int_list(*v[3], 3, "axes"));
  }
  if (v[4]) {
    INGOT_ASSIGN_OR_RETURN(steps, read_int_list(*v[4], 4, "steps"));
  }
  return slice_view(in, s, e, v[3] ? &axes : nullptr, v[4] ? &steps : nullptr);
}

namespace {

// ---------------------------------------------------------------- Slice
class SliceKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override { return params_.init(node, opset); }
  Status infer(InferContext& ctx) const override {
    const bool from_attr = params_.from_attributes();
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, from_attr ? 1 : 3, from_attr ? 1 : 5));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    const Tensor* v[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    if (!from_attr) {
      const char* names[5] = {"data", "starts", "ends", "axes", "steps"};
      for (int i = 1; i < 5; ++i) {
        if (!ctx.has_input(i)) continue;
        INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, i, names[i]));
        v[i] = ctx.input_value(i);
        if (!v[i]) {
          ctx.set_output_dynamic(0, ctx.input_dtype(0));
          return Status::ok();
        }
      }
    }
    INGOT_ASSIGN_OR_RETURN(SliceView p, params_.view(ctx.input_shape(0), v));
    ctx.set_output(0, ctx.input_dtype(0), p.out);
    return Status::ok();
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* v[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
    for (int i = 1; i < 5; ++i)
      if (!params_.from_attributes() && ctx.has_input(i)) v[i] = &ctx.input(i);
    INGOT_ASSIGN_OR_RETURN(SliceView p, params_.view(x.shape(), v));
    Tensor& y = ctx.allocate_output(0, x.dtype(), p.out);
    if (y.numel() == 0) return Status::ok();
    auto st = strides_of(x.shape());
    int64_t base = 0;
    std::vector<int64_t> in_strides(st.size());
    for (size_t k = 0; k < st.size(); ++k) {
      base += p.start[k] * st[k];
      in_strides[k] = p.step[k] * st[k];
    }
    size_t es = dtype_size(x.dtype());
    strided_copy(static_cast<const uint8_t*>(x.raw()) + base * int64_t(es), p.out, in_strides, es, y.raw());
    return Status::ok();
  }

 private:
  SliceParams params_;
};

// infer() of an op whose output shape follows from the data's shape and input 1's values
// (dynamic while those values are unknown): Expand, Tile, CenterCropPad.
template <class F>
Status infer_shaped_by_input1(InferContext& ctx, const char* data_name, const char* values_name, F&& out_shape) {
  INGOT_RETURN_IF_ERROR(check_input_count(ctx, 2, 2));
  INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, data_name));
  INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, values_name));
  if (!ctx.input_value(1)) {
    ctx.set_output_dynamic(0, ctx.input_dtype(0));
    return Status::ok();
  }
  INGOT_ASSIGN_OR_RETURN(Shape out, out_shape(ctx.input_shape(0), *ctx.input_value(1)));
  ctx.set_output(0, ctx.input_dtype(0), std::move(out));
  return Status::ok();
}

// ---------------------------------------------------------------- CenterCropPad
// Opset 18: each axis in `axes` (default all) cropped or zero-padded to shape[i], centered: a
// crop starts at floor((dim - n) / 2), a pad puts floor((n - dim) / 2) zeros before the data and
// the rest after.
class CenterCropPadKernel : public OpKernel {
 public:
  Status init(const Node& node, int) override {
    has_axes_ = node.attrs.has("axes");
    axes_ = node.attrs.get_ints("axes");
    return Status::ok();
  }
  // Per input axis: the output size and the input index of output index 0 (negative: padding).
  struct Window {
    Shape out;
    std::vector<int64_t> first;
  };
  Expected<Window> window(const Shape& in, const Tensor& shape) const {
    INGOT_ASSIGN_OR_RETURN(auto n, read_int_list(shape, 1, "shape"));
    const int r = int(in.size());
    std::vector<int64_t> axes = axes_;
    if (!has_axes_)
      for (int i = 0; i < r; ++i) axes.push_back(i);
    if (n.size() != axes.size())
      return invalid_argument("input 1 (shape) " + ints_str(n) + " has " + std::to_string(n.size()) + " entries for " +
                              std::to_string(axes.size()) + " axes");
    Window w{in, std::vector<int64_t>(size_t(r), 0)};
    std::vector<bool> seen(size_t(r), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axes[i], r, "axes entry"));
      if (seen[size_t(a)]) return invalid_model("attribute 'axes' " + ints_str(axes_) + " has a repeated axis");
      seen[size_t(a)] = true;
      if (n[i] < 0) return invalid_argument("input 1 (shape) " + ints_str(n) + " has a negative entry");
      const int64_t d = in[size_t(a)];
      w.out[size_t(a)] = n[i];
      w.first[size_t(a)] = d >= n[i] ? (d - n[i]) / 2 : -((n[i] - d) / 2);
    }
    INGOT_RETURN_IF_ERROR(check_output_size(w.out, 1));
    return w;
  }
  Status infer(InferContext& ctx) const override {
    return infer_shaped_by_input1(ctx, "input_data", "shape", [this](const Shape& in, const Tensor& v) -> Expected<Shape> {
      INGOT_ASSIGN_OR_RETURN(Window w, window(in, v));
      return w.out;
    });
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(Window w, window(x.shape(), ctx.input(1)));
    Tensor& y = ctx.allocate_output(0, x.dtype(), w.out);
    if (y.numel() == 0) return Status::ok();
    const int r = x.rank();
    const size_t es = dtype_size(x.dtype());
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    if (r == 0) {
      std::memcpy(dst, src, es);
      return Status::ok();
    }
    // Output rows (last axis): a row outside the input on an outer axis is zeros; otherwise
    // zeros, the input's overlapping span, zeros.
    const auto ist = strides_of(x.shape());
    const int64_t out_last = w.out[size_t(r - 1)], in_last = x.dim(r - 1), first = w.first[size_t(r - 1)];
    const int64_t c0 = std::clamp<int64_t>(-first, 0, out_last), c1 = std::clamp<int64_t>(in_last - first, c0, out_last);
    const int64_t rows = y.numel() / out_last;
    parallel_for(rows, out_last, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        uint8_t* o = dst + size_t(row * out_last) * es;
        int64_t rest = row, in_off = 0;
        bool inside = true;
        for (int k = r - 2; k >= 0; --k) {
          const int64_t i = rest % w.out[size_t(k)] + w.first[size_t(k)];
          rest /= w.out[size_t(k)];
          if (i < 0 || i >= x.dim(k)) inside = false;
          in_off += i * ist[size_t(k)];
        }
        if (!inside || c1 <= c0) {
          std::memset(o, 0, size_t(out_last) * es);
          continue;
        }
        std::memset(o, 0, size_t(c0) * es);
        std::memcpy(o + size_t(c0) * es, src + size_t(in_off + c0 + first) * es, size_t(c1 - c0) * es);
        std::memset(o + size_t(c1) * es, 0, size_t(out_last - c1) * es);
      }
    });
    return Status::ok();
  }

 private:
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------- Expand
class ExpandKernel : public OpKernel {
 public:
  static Expected<Shape> out_shape(const Shape& in, const Tensor& shape) {
    INGOT_ASSIGN_OR_RETURN(auto v, read_int_list(shape, 1, "shape"));
    for (int64_t d : v)
      if (d < 0) return invalid_argument("input 1 (shape) " + ints_str(v) + " has a negative dimension");
    INGOT_ASSIGN_OR_RETURN(Shape out, broadcast_shapes({in, Shape(v)}));
    INGOT_RETURN_IF_ERROR(check_output_size(out, 1));
    return out;
  }
  Status infer(InferContext& ctx) const override { return infer_shaped_by_input1(ctx, "input", "shape", out_shape); }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(Shape s, out_shape(x.shape(), ctx.input(1)));
    if (s == x.shape()) {
      ctx.set_output(0, x);
      return Status::ok();
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), s);
    strided_copy(x.raw(), s, broadcast_strides(x.shape(), s), dtype_size(x.dtype()), y.raw());
    return Status::ok();
  }
};

// ---------------------------------------------------------------- Tile
class TileKernel : public OpKernel {
 public:
  static Expected<Shape> out_shape(const Shape& in, const Tensor& reps) {
    INGOT_ASSIGN_OR_RETURN(auto v, read_int_list(reps, 1, "repeats"));
    if (v.size() != in.size())
      return invalid_argument("input 1 (repeats) has " + std::to_string(v.size()) + " entries but the input has rank " +
                              std::to_string(in.size()));
    Shape out = in;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0) return invalid_argument("input 1 (repeats) " + ints_str(v) + " has a negative entry");
      out[i] *= v[i];
    }
    INGOT_RETURN_IF_ERROR(check_output_size(out, 1));
    return out;
  }
  Status infer(InferContext& ctx) const override { return infer_shaped_by_input1(ctx, "input", "repeats", out_shape); }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    INGOT_ASSIGN_OR_RETURN(Shape s, out_shape(x.shape(), ctx.input(1)));
    Tensor& y = ctx.allocate_output(0, x.dtype(), s);
    if (y.numel() == 0) return Status::ok();
    int r = x.rank();
    size_t es = dtype_size(x.dtype());
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(y.raw());
    if (r == 0) {
      std::memcpy(dst, src, es);
      return Status::ok();
    }
    // Each output row (last dim) is the matching input row repeated.
    int64_t in_last = x.dim(r - 1), out_last = s[size_t(r - 1)];
    size_t row_bytes = size_t(in_last) * es;
    int64_t rows = y.numel() / out_last;
    auto ist = strides_of(x.shape());
    parallel_for(rows, out_last, [&](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        int64_t rem = row, in_off = 0;
        for (int k = r - 2; k >= 0; --k) {
          int64_t idx = rem % s[size_t(k)];
          rem /= s[size_t(k)];
          in_off += (idx % x.dim(k)) * ist[size_t(k)];
        }
        uint8_t* o = dst + row * out_last * int64_t(es);
        for (int64_t c = 0; c < out_last; c += in_last) std::memcpy(o + c * int64_t(es), src + in_off * int64_t(es), row_bytes);
      }
    });
    return Status::ok();
  }
};

// ---------------------------------------------------------------- Pad
enum class PadMode { kConstant, kReflect, kEdge, kWrap };

class PadKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    std::string mode = node.attrs.get_string("mode", "constant");
    if (mode == "constant") mode_ = PadMode::kConstant;
    else if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else if (mode == "wrap") mode_ = PadMode::kWrap;
    else return invalid_model("unknown mode '" + mode + "'");
    if (opset < 11) {
      const char* name = opset < 2 ? "paddings" : "pads";
      if (!node.attrs.has(name)) return invalid_model(std::string("attribute '") + name + "' is required");
      pads_attr_ = node.attrs.get_ints(name);
      value_attr_ = node.attrs.get_float("value", 0.f);
    }
    return Status::ok();
  }
  // pads in ONNX layout [begin_0..begin_n, end_0..end_n] over the given axes.
  Expected<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pads_for(const Shape& in, const std::vector<int64_t>& pads,
                                                                            const std::vector<int64_t>* axes_in) const {
    int r = int(in.size());
    std::vector<int64_t> axes;
    if (axes_in) axes = *axes_in;
    else for (int i = 0; i < r; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size())
      return invalid_argument("pads " + ints_str(pads) + " must have " + std::to_string(2 * axes.size()) +
                              " entries (2 per padded axis) for input of shape " + shape_str(in));
    std::vector<int64_t> pb(size_t(r), 0), pe(size_t(r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      INGOT_ASSIGN_OR_RETURN(int a, normalize_axis(axes[i], r, "axes entry"));
      pb[size_t(a)] = pads[i];
      pe[size_t(a)] = pads[i + axes.size()];
    }
    for (int k = 0; k < r; ++k) {
      int64_t d = in[size_t(k)], o = d + pb[size_t(k)] + pe[size_t(k)];
      if (o < 0)
        return invalid_argument("pads " + ints_str(pads) + " remove more than the " + std::to_string(d) +
                                " elements of axis " + std::to_string(k));
      if (mode_ != PadMode::kConstant && d == 0 && o > 0)
        return invalid_argument("cannot pad empty axis " + std::to_string(k) + " in a non-constant mode");
    }
    Shape out = in;
    for (int k = 0; k < r; ++k) out[size_t(k)] += pb[size_t(k)] + pe[size_t(k)];
    INGOT_RETURN_IF_ERROR(check_output_size(out, 1));
    return std::make_pair(pb, pe);
  }
  Expected<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pads_from(const Shape& in, const Tensor* pads,
                                                                             const Tensor* axes) const {
    if (opset_ < 11) return pads_for(in, pads_attr_, nullptr);
    INGOT_ASSIGN_OR_RETURN(auto p, read_int_list(*pads, 1, "pads"));
    if (!axes) return pads_for(in, p, nullptr);
    INGOT_ASSIGN_OR_RETURN(auto a, read_int_list(*axes, 3, "axes"));
    return pads_for(in, p, &a);
  }
  Status infer(InferContext& ctx) const override {
    INGOT_RETURN_IF_ERROR(check_input_count(ctx, opset_ < 11 ? 1 : 2, opset_ < 11 ? 1 : (opset_ >= 18 ? 4 : 3)));
    INGOT_RETURN_IF_ERROR(check_storable(ctx, 0, "data"));
    if (opset_ >= 11) {
      INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 1, "pads"));
      if (ctx.has_input(2)) {
        INGOT_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
        if (shape_numel(ctx.input_shape(2)) > 1)
          return invalid_argument("input 2 (constant_value) must be a scalar, got shape " + shape_str(ctx.input_shape(2)));
      }
      if (ctx.has_input(3)) INGOT_RETURN_IF_ERROR(check_index_dtype(ctx, 3, "axes"));
      if (!ctx.input_value(1) || (ctx.has_input(3) && !ctx.input_value(3))) {
        ctx.set_output_dynamic(0, ctx.input_dtype(0));
        return Status::ok();
      }
    }
    const Shape& in = ctx.input_shape(0);
    INGOT_ASSIGN_OR_RETURN(auto pp, pads_from(in, ctx.input_value(1), ctx.input_value(3)));
    Shape out = in;
    for (size_t k = 0; k < in.size(); ++k) out[k] += pp.first[k] + pp.second[k];
    ctx.set_output(0, ctx.input_dtype(0), out);
    return Status::ok();
  }
  // Maps output index o on an axis of input size d with begin pad b to an input index, or -1.
  int64_t map_index(int64_t o, int64_t d, int64_t b) const {
    int64_t i = o - b;
    if (i >= 0 && i < d) return i;
    switch (mode_) {
      case PadMode::kConstant: return -1;
      case PadMode::kEdge: return i < 0 ? 0 : d - 1;
      case PadMode::kWrap: return ((i % d) + d) % d;
      case PadMode::kReflect: {
        if (d == 1) return 0;
        int64_t period = 2 * (d - 1);
        int64_t m = ((i % period) + period) % period;
        return m < d ? m : period - m;
      }
    }
    return -1;
  }
  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor* pads = opset_ >= 11 ? &ctx.input(1) : nullptr;
    const Tensor* axes = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    INGOT_ASSIGN_OR_RETURN(auto pp, pads_from(x.shape(), pads, axes));
    int r = x.rank();
    Shape out = x.shape();
    for (int k = 0; k < r; ++k) out[size_t(k)] += pp.first[size_t(k)] + pp.second[size_t(k)];
    Tensor& y = ctx.allocate_output(0, x.dtype(), out);
    if (y.numel() == 0) return Status::ok();
    size_t es = dtype_size(x.dtype());
    // The fill value as bytes of the element type.
    uint64_t fill = 0;
    if (opset_ >= 11 && ctx.has_input(2) && ctx.input(2).numel() == 1) {
      std::memcpy(&fill, ctx.input(2).raw(), es);
    } else if (opset_ < 11) {
      dispatch_all(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T v = from_double<T>(double(value_attr_));
        std::memcpy(&fill, &v, sizeof(T));
      });
    }
    if (r == 0) {
      std::memcpy(y.raw(), x.raw(), es);
      return Status::ok();
    }
    // Per-axis index maps.
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(r));
    for (int k = 0; k < r; ++k) {
      auto& m = maps[size_t(k)];
      m.resize(size_t(out[size_t(k)]));
      for (int64_t o = 0; o < out[size_t(k)]; ++o) m[size_t(o)] = map_index(o, x.dim(k), pp.first[size_t(k)]);
    }
    auto ist = strides_of(x.shape());
    int64_t last = out[size_t(r - 1)];
    int64_t rows = y.numel() / last;
    const auto& lm = maps[size_t(r - 1)];
    // The run of the last axis that copies straight from the input.
    int64_t c0 = std::min<int64_t>(last, std::max<int64_t>(0, pp.first[size_t(r - 1)]));
    int64_t c1 = std::min<int64_t>(last, pp.first[size_t(r - 1)] + x.dim(r - 1));
    dispatch_by_size(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T fv;
      std::memcpy(&fv, &fill, sizeof(T));
      const T* ip = x.data<T>();
      T* op = y.data<T>();
      parallel_for(rows, last, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          T* o = op + row * last;
          int64_t rem = row, in_off = 0;
          bool pad_row = false;
          for (int k = r - 2; k >= 0; --k) {
            int64_t idx = rem % out[size_t(k)];
            rem /= out[size_t(k)];
            int64_t mi = maps[size_t(k)][size_t(idx)];
            if (mi < 0) {
              pad_row = true;
              break;
            }
            in_off += mi * ist[size_t(k)];
          }
          if (pad_row) {
            std::fill(o, o + last, fv);
            continue;
          }
          const T* irow = ip + in_off;
          for (int64_t c = 0; c < c0; ++c) o[c] = lm[size_t(c)] < 0 ? fv : irow[lm[size_t(c)]];
          if (c1 > c0) std::memcpy(o + c0, irow + (c0 - pp.first[size_t(r - 1)]), size_t(c1 - c0) * sizeof(T));
          for (int64_t c = std::max(c0, c1); c < last; ++c) o[c] = lm[size_t(c)] < 0 ? fv : irow[lm[size_t(c)]];
        }
      });
    });
    return Status::ok();
  }

 private:
  int opset_ = 0;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> pads_attr_;
  float value_attr_ = 0;
};

}  // namespace
}  // namespace tensor_ops

INGOT_REGISTER_KERNEL(cpu, "", Slice, tensor_ops::SliceKernel);
INGOT_REGISTER_KERNEL(cpu, "", Expand, tensor_ops::ExpandKernel);
INGOT_REGISTER_KERNEL(cpu, "", Tile, tensor_ops::TileKernel);
INGOT_REGISTER_KERNEL(cpu, "", Pad, tensor_ops::PadKernel);
INGOT_REGISTER_KERNEL(cpu, "", CenterCropPad, tensor_ops::CenterCropPadKernel);

}  // namespace ingot
