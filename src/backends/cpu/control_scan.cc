// Scan: runs the body once per slice of its scan inputs, threading N state values through it
// and stacking its K scan outputs.
//   opset 9+: inputs  = N initial states, M scan inputs (M = num_scan_inputs)
//             attributes scan_input_axes/directions, scan_output_axes/directions
//   opset 8:  inputs  = sequence_lens (optional), N states, M scan inputs, all with a leading
//             batch axis; scan inputs are [batch, seq, ...]; attribute `directions`.
//   body: inputs N states + M slices; outputs N states + K scan elements.
#include <cstring>
#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

std::string num(size_t n) { return std::to_string(n); }

int64_t prod(const Shape& s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

// x with axis `axis` fixed at `idx` (that axis removed).
Tensor slice_axis(const Tensor& x, int axis, int64_t idx) {
  Shape s = x.shape();
  int64_t n = s[size_t(axis)];
  s.erase(s.begin() + axis);
  Tensor out(x.dtype(), s);
  int64_t outer = prod(x.shape(), 0, size_t(axis));
  size_t inner = size_t(prod(x.shape(), size_t(axis) + 1, x.shape().size())) * dtype_size(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  if (inner)
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + size_t(o) * inner, src + size_t(o * n + idx) * inner, inner);
  return out;
}

// Writes `src` (shape s) into `dst` (s with an axis of length n inserted at `axis`) at index p.
void insert_axis(Tensor& dst, int axis, int64_t n, int64_t p, const Tensor& src) {
  int64_t outer = prod(src.shape(), 0, size_t(axis));
  size_t inner = size_t(prod(src.shape(), size_t(axis), src.shape().size())) * dtype_size(src.dtype());
  const auto* s = static_cast<const uint8_t*>(src.raw());
  auto* d = static_cast<uint8_t*>(dst.raw());
  if (inner)
    for (int64_t o = 0; o < outer; ++o) std::memcpy(d + size_t(o * n + p) * inner, s + size_t(o) * inner, inner);
}

struct ScanResult {
  std::vector<Tensor> states, scans;
};

class ScanKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    opset_ = opset;
    const Graph* body = node.attrs.get_graph("body");
    if (!body) return invalid_model("needs graph attribute 'body'");
    int64_t m = node.attrs.get_int("num_scan_inputs", -1);
    if (m < 1) return invalid_model("attribute num_scan_inputs must be >= 1, got " + std::to_string(m));
    int first = opset < 9 ? 1 : 0;  // opset 8: input 0 is sequence_lens
    int64_t n = int64_t(node.inputs.size()) - first - m;
    if (n < 0) {
      return invalid_model("has " + num(node.inputs.size()) + " inputs, fewer than num_scan_inputs=" + std::to_string(m) +
                           (first ? " + sequence_lens" : ""));
    }
    n_state_ = int(n);
    n_scan_in_ = int(m);
    if (body->inputs.size() != size_t(n + m)) {
      return invalid_model("body graph has " + num(body->inputs.size()) + " inputs, expected " + std::to_string(n) +
                           " state + " + std::to_string(m) + " scan inputs");
    }
    if (body->outputs.size() < size_t(n)) {
      return invalid_model("body graph has " + num(body->outputs.size()) + " outputs, expected at least " +
                           std::to_string(n) + " state outputs");
    }
    n_scan_out_ = int(body->outputs.size()) - n_state_;
    if (node.outputs.size() != body->outputs.size()) {
      return invalid_model("the node has " + num(node.outputs.size()) + " outputs, but the body gives " +
                           std::to_string(n_state_) + " state + " + std::to_string(n_scan_out_) + " scan outputs");
    }
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (i >= size_t(first) && node.inputs[i] == kNoValue) return invalid_model("input " + num(i) + " is empty");
    for (const auto* list : {&body->inputs, &body->outputs})
      for (ValueId v : *list)
        if (!body->value(v).non_tensor_kind.empty()) {
          return unsupported("body value '" + body->value(v).name + "' is a " + body->value(v).non_tensor_kind);
        }
    auto get_list = [&](const char* name, int count, std::vector<int64_t>& out, bool dirs) -> Status {
      out = node.attrs.get_ints(name, std::vector<int64_t>(size_t(count), 0));
      if (out.size() != size_t(count)) {
        return invalid_model(std::string("attribute ") + name + " has " + num(out.size()) + " values, expected " +
                             std::to_string(count));
      }
      if (dirs)
        for (int64_t d : out)
          if (d != 0 && d != 1) return invalid_model(std::string("attribute ") + name + " values must be 0 or 1, got " + std::to_string(d));
      return Status::ok();
    };
    if (opset < 9) {
      INGOT_RETURN_IF_ERROR(get_list("directions", n_scan_in_, in_dirs_, true));
      in_axes_.assign(size_t(n_scan_in_), 0);
      out_axes_.assign(size_t(n_scan_out_), 0);
      out_dirs_.assign(size_t(n_scan_out_), 0);
    } else {
      INGOT_RETURN_IF_ERROR(get_list("scan_input_axes", n_scan_in_, in_axes_, false));
      INGOT_RETURN_IF_ERROR(get_list("scan_input_directions", n_scan_in_, in_dirs_, true));
      INGOT_RETURN_IF_ERROR(get_list("scan_output_axes", n_scan_out_, out_axes_, false));
      INGOT_RETURN_IF_ERROR(get_list("scan_output_directions", n_scan_out_, out_dirs_, true));
    }
    for (int k = 0; k < n_scan_out_; ++k) {
      const ValueInfo& vi = body->value(body->outputs[size_t(n_state_ + k)]);
      scan_dtypes_.push_back(vi.dtype);
      declared_.push_back(vi.shape);
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    int first = opset_ < 9 ? 1 : 0;
    if (first && ctx.has_input(0)) {
      DType t = ctx.input_dtype(0);
      if (t != DType::kInt32 && t != DType::kInt64) return invalid_argument("sequence_lens must be int32, got " + dtype_name(t));
      if (ctx.input_rank(0) != 1) return invalid_argument("sequence_lens must be 1-D, got shape " + shape_str(ctx.input_shape(0)));
    }
    for (int i = 0; i < n_state_; ++i) ctx.set_output_dynamic(i, ctx.input_dtype(first + i));
    for (int k = 0; k < n_scan_out_; ++k)
      if (scan_dtypes_[size_t(k)] != DType::kUndefined) ctx.set_output_dynamic(n_state_ + k, scan_dtypes_[size_t(k)]);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Graph* body = ctx.node().attrs.get_graph("body");
    if (!body) return invalid_model("needs graph attribute 'body'");
    return opset_ < 9 ? compute_v8(ctx, *body) : compute_v9(ctx, *body);
  }

 private:
  // Runs the scan over T steps; scan inputs are sliced along in_axes (normalised).
  Status run(const ComputeContext& ctx, const Graph& body, std::vector<Tensor> states,
             const std::vector<Tensor>& xs, const std::vector<int>& axes, int64_t T, ScanResult& r) const {
    r.scans.assign(size_t(n_scan_out_), Tensor());
    std::vector<int> oaxes(size_t(n_scan_out_), 0);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<Tensor> ins = states;
      for (int j = 0; j < n_scan_in_; ++j) {
        int64_t idx = in_dirs_[size_t(j)] ? T - 1 - t : t;
        ins.push_back(slice_axis(xs[size_t(j)], axes[size_t(j)], idx));
      }
      auto outs = ctx.run_subgraph(body, ins);
      if (!outs) return outs.status().with_context("iteration " + std::to_string(t) + ": ");
      if (outs->size() != size_t(n_state_ + n_scan_out_)) {
        return invalid_model("body graph gave " + num(outs->size()) + " outputs, expected " +
                             std::to_string(n_state_ + n_scan_out_));
      }
      for (int i = 0; i < n_state_; ++i) {
        Tensor& v = (*outs)[size_t(i)];
        if (v.dtype() != states[size_t(i)].dtype()) {
          return invalid_model("state " + std::to_string(i) + " enters as " + dtype_name(states[size_t(i)].dtype()) +
                               " but the body returns " + dtype_name(v.dtype()));
        }
        states[size_t(i)] = std::move(v);
      }
      for (int k = 0; k < n_scan_out_; ++k) {
        const Tensor& v = (*outs)[size_t(n_state_ + k)];
        DType decl = scan_dtypes_[size_t(k)];
        if ((decl != DType::kUndefined && v.dtype() != decl) || dtype_size(v.dtype()) == 0) {
          return invalid_model("scan output " + std::to_string(k) + " has dtype " + dtype_name(v.dtype()) +
                               (decl != DType::kUndefined ? ", the body declares " + dtype_name(decl) : std::string()));
        }
        Tensor& out = r.scans[size_t(k)];
        int rank = v.rank();
        if (t == 0) {
          auto ax = normalize_axis(out_axes_[size_t(k)], rank + 1, "scan_output_axes");
          if (!ax) return ax.status();
          oaxes[size_t(k)] = *ax;
          Shape s = v.shape();
          s.insert(s.begin() + *ax, T);
          out = Tensor(v.dtype(), s);
        } else {
          Shape s = out.shape();
          s.erase(s.begin() + oaxes[size_t(k)]);
          if (s != v.shape() || v.dtype() != out.dtype()) {
            return invalid_model("scan output " + std::to_string(k) + " has shape " + shape_str(v.shape()) +
                                 " in iteration " + std::to_string(t) + " but " + shape_str(s) + " before");
          }
        }
        int64_t p = out_dirs_[size_t(k)] ? T - 1 - t : t;
        insert_axis(out, oaxes[size_t(k)], T, p, v);
      }
    }
    if (T == 0) {
      for (int k = 0; k < n_scan_out_; ++k) {
        Shape s;
        const auto& d = declared_[size_t(k)];
        if (d) {
          for (const Dim& x : *d) s.push_back(x.known() ? x.value : 0);
          auto ax = normalize_axis(out_axes_[size_t(k)], int(s.size()) + 1, "scan_output_axes");
          if (!ax) return ax.status();
          s.insert(s.begin() + *ax, 0);
        } else {
          s = {0};
        }
        DType dt = scan_dtypes_[size_t(k)] == DType::kUndefined ? DType::kFloat32 : scan_dtypes_[size_t(k)];
        r.scans[size_t(k)] = Tensor(dt, s);
      }
    }
    r.states = std::move(states);
    return Status::ok();
  }

  Status compute_v9(ComputeContext& ctx, const Graph& body) const {
    std::vector<Tensor> states, xs;
    for (int i = 0; i < n_state_; ++i) states.push_back(ctx.input(i));
    std::vector<int> axes;
    int64_t T = -1;
    for (int j = 0; j < n_scan_in_; ++j) {
      const Tensor& x = ctx.input(n_state_ + j);
      if (x.rank() < 1) return invalid_argument("scan input " + std::to_string(j) + " must have rank >= 1, got a scalar");
      auto ax = normalize_axis(in_axes_[size_t(j)], x.rank(), "scan_input_axes");
      if (!ax) return ax.status();
      axes.push_back(*ax);
      int64_t len = x.dim(*ax);
      if (T >= 0 && len != T) {
        return invalid_argument("scan input " + std::to_string(j) + " has " + std::to_string(len) +
                                " steps along its scan axis, input 0 has " + std::to_string(T));
      }
      T = len;
      xs.push_back(x);
    }
    ScanResult r;
    INGOT_RETURN_IF_ERROR(run(ctx, body, std::move(states), xs, axes, T, r));
    for (int i = 0; i < n_state_; ++i)
      if (ctx.has_output(i)) ctx.set_output(i, r.states[size_t(i)]);
    for (int k = 0; k < n_scan_out_; ++k)
      if (ctx.has_output(n_state_ + k)) ctx.set_output(n_state_ + k, r.scans[size_t(k)]);
    return Status::ok();
  }

  Status compute_v8(ComputeContext& ctx, const Graph& body) const {
    int64_t B = -1, S = -1;
    for (int i = 0; i < n_state_ + n_scan_in_; ++i) {
      const Tensor& x = ctx.input(1 + i);
      bool scan = i >= n_state_;
      if (x.rank() < (scan ? 2 : 1)) {
        return invalid_argument("input " + std::to_string(1 + i) + " must have rank >= " + (scan ? "2 [batch, seq, ...]" : "1 [batch, ...]") +
                                ", got shape " + shape_str(x.shape()));
      }
      if (B >= 0 && x.dim(0) != B) {
        return invalid_argument("input " + std::to_string(1 + i) + " has batch size " + std::to_string(x.dim(0)) +
                                ", expected " + std::to_string(B));
      }
      B = x.dim(0);
      if (scan) {
        if (S >= 0 && x.dim(1) != S) return invalid_argument("scan inputs disagree on the sequence length");
        S = x.dim(1);
      }
    }
    std::vector<int64_t> lens(size_t(B), S);
    if (ctx.has_input(0)) {
      const Tensor& sl = ctx.input(0);
      if (sl.numel() != B) return invalid_argument("sequence_lens has " + std::to_string(sl.numel()) + " values, expected batch size " + std::to_string(B));
      for (int64_t b = 0; b < B; ++b) {
        lens[size_t(b)] = sl.scalar_as_int(b);
        if (lens[size_t(b)] < 0 || lens[size_t(b)] > S) {
          return invalid_argument("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[size_t(b)]) +
                                  " is outside [0, " + std::to_string(S) + "]");
        }
      }
    }
    std::vector<Tensor> state_out(static_cast<size_t>(n_state_)), scan_out(static_cast<size_t>(n_scan_out_));
    for (int64_t b = 0; b < B; ++b) {
      std::vector<Tensor> states, xs;
      for (int i = 0; i < n_state_; ++i) states.push_back(slice_axis(ctx.input(1 + i), 0, b));
      for (int j = 0; j < n_scan_in_; ++j) {
        Tensor x = slice_axis(ctx.input(1 + n_state_ + j), 0, b);  // [S, ...]
        if (lens[size_t(b)] < S) {
          Shape s = x.shape();
          s[0] = lens[size_t(b)];
          Tensor y(x.dtype(), s);
          if (y.nbytes()) std::memcpy(y.raw(), x.raw(), y.nbytes());
          x = y;
        }
        xs.push_back(x);
      }
      ScanResult r;
      INGOT_RETURN_IF_ERROR(run(ctx, body, std::move(states), xs, std::vector<int>(size_t(n_scan_in_), 0),
                                lens[size_t(b)], r).with_context("batch " + std::to_string(b) + ": "));
      for (int i = 0; i < n_state_; ++i) {
        const Tensor& v = r.states[size_t(i)];
        Tensor& o = state_out[size_t(i)];
        if (b == 0) {
          Shape s = v.shape();
          s.insert(s.begin(), B);
          o = Tensor(v.dtype(), s);
        } else if (Shape(o.shape().begin() + 1, o.shape().end()) != v.shape() || o.dtype() != v.dtype()) {
          return invalid_model("state " + std::to_string(i) + " has different shapes across the batch");
        }
        insert_axis(o, 0, B, b, v);
      }
      for (int k = 0; k < n_scan_out_; ++k) {
        Tensor v = r.scans[size_t(k)];  // [len_b, ...]
        Tensor& o = scan_out[size_t(k)];
        Shape elem(v.shape().begin() + 1, v.shape().end());
        if (v.dim(0) == 0 && (o.defined() || b + 1 < B)) continue;  // nothing to copy
        if (!o.defined()) {
          Shape s = elem;
          s.insert(s.begin(), {B, S});
          o = Tensor(v.dtype(), s);
        } else if (Shape(o.shape().begin() + 2, o.shape().end()) != elem || o.dtype() != v.dtype()) {
          return invalid_model("scan output " + std::to_string(k) + " has different shapes across the batch");
        }
        if (v.nbytes()) std::memcpy(static_cast<uint8_t*>(o.raw()) + size_t(b) * (o.nbytes() / size_t(B)), v.raw(), v.nbytes());
      }
    }
    for (int i = 0; i < n_state_; ++i) {
      if (!ctx.has_output(i)) continue;
      if (B == 0) ctx.set_output(i, ctx.input(1 + i));
      else ctx.set_output(i, state_out[size_t(i)]);
    }
    for (int k = 0; k < n_scan_out_; ++k) {
      if (!ctx.has_output(n_state_ + k)) continue;
      if (B == 0) {
        DType dt = scan_dtypes_[size_t(k)] == DType::kUndefined ? DType::kFloat32 : scan_dtypes_[size_t(k)];
        ctx.allocate_output(n_state_ + k, dt, {0, S});
      } else {
        ctx.set_output(n_state_ + k, scan_out[size_t(k)]);
      }
    }
    return Status::ok();
  }

  int opset_ = 0;
  int n_state_ = 0, n_scan_in_ = 0, n_scan_out_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
  std::vector<DType> scan_dtypes_;
  std::vector<std::optional<SymShape>> declared_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Scan, ScanKernel);

}  // namespace ingot
