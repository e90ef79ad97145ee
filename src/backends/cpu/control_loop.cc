// Loop: runs the body graph while `i < M && cond`, threading N loop-carried values through
// it and stacking its K scan outputs along a new axis 0.
//   node inputs:  M (optional int64 trip count), cond (optional bool), v_initial x N
//   body inputs:  iteration_num (int64 scalar), cond_in (bool scalar), v x N
//   body outputs: cond_out, v x N, scan x K
//   node outputs: v_final x N, scan_outputs x K
// Sequence/optional loop state is not supported.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace ingot {
namespace {

std::string num(size_t n) { return std::to_string(n); }

// Shape of a scan output when the loop ran zero times: [0] + the body's declared shape with
// unknown dims as 0 ([0] when even the rank is unknown).
Shape empty_scan_shape(const ValueInfo& vi) {
  Shape s{0};
  if (vi.shape)
    for (const Dim& d : *vi.shape) s.push_back(d.known() ? d.value : 0);
  return s;
}

Status read_single(const Tensor& t, DType want, const std::string& what) {
  if (t.dtype() != want) return invalid_argument(what + " must be " + dtype_name(want) + ", got " + dtype_name(t.dtype()));
  if (t.numel() != 1) return invalid_argument(what + " must hold exactly one element, got shape " + shape_str(t.shape()));
  return Status::ok();
}

class LoopKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    const Graph* body = node.attrs.get_graph("body");
    if (!body) return invalid_model("needs graph attribute 'body'");
    if (node.inputs.size() < 2) {
      return invalid_model("needs at least 2 inputs (M, cond; either may be empty), got " + num(node.inputs.size()));
    }
    n_carried_ = int(node.inputs.size()) - 2;
    size_t n = size_t(n_carried_);
    if (body->inputs.size() != 2 + n) {
      return invalid_model("body graph has " + num(body->inputs.size()) + " inputs, expected 2 + " + num(n) +
                           " loop-carried");
    }
    if (body->outputs.size() < 1 + n) {
      return invalid_model("body graph has " + num(body->outputs.size()) + " outputs, expected 1 + " + num(n) +
                           " loop-carried (+ scan outputs)");
    }
    n_scan_ = int(body->outputs.size() - 1 - n);
    if (node.outputs.size() != n + size_t(n_scan_)) {
      return invalid_model("the node has " + num(node.outputs.size()) + " outputs, but the body gives " + num(n) +
                           " loop-carried + " + std::to_string(n_scan_) + " scan outputs");
    }
    for (size_t i = 2; i < node.inputs.size(); ++i)
      if (node.inputs[i] == kNoValue) return unsupported("loop-carried input " + num(i) + " is empty (optional state)");
    for (const auto* list : {&body->inputs, &body->outputs})
      for (ValueId v : *list)
        if (!body->value(v).non_tensor_kind.empty()) {
          return unsupported("body value '" + body->value(v).name + "' is a " + body->value(v).non_tensor_kind +
                             "; ingot runs Loop with tensor state only");
        }
    for (int k = 0; k < n_scan_; ++k) {
      const ValueInfo& vi = body->value(body->outputs[size_t(1 + n_carried_ + k)]);
      scan_dtypes_.push_back(vi.dtype);
      empty_shapes_.push_back(empty_scan_shape(vi));
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (ctx.has_input(0)) {
      if (ctx.input_dtype(0) != DType::kInt64) return invalid_argument("M must be int64, got " + dtype_name(ctx.input_dtype(0)));
      if (shape_numel(ctx.input_shape(0)) != 1) return invalid_argument("M must hold one element, got shape " + shape_str(ctx.input_shape(0)));
    }
    if (ctx.has_input(1)) {
      if (ctx.input_dtype(1) != DType::kBool) return invalid_argument("cond must be bool, got " + dtype_name(ctx.input_dtype(1)));
      if (shape_numel(ctx.input_shape(1)) != 1) return invalid_argument("cond must hold one element, got shape " + shape_str(ctx.input_shape(1)));
    }
    for (int i = 0; i < n_carried_; ++i) {
      if (!ctx.has_input(2 + i)) return unsupported("loop-carried input " + std::to_string(2 + i) + " is empty");
      ctx.set_output_dynamic(i, ctx.input_dtype(2 + i));
    }
    for (int k = 0; k < n_scan_; ++k)
      if (scan_dtypes_[size_t(k)] != DType::kUndefined) ctx.set_output_dynamic(n_carried_ + k, scan_dtypes_[size_t(k)]);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Graph* body = ctx.node().attrs.get_graph("body");
    if (!body) return invalid_model("needs graph attribute 'body'");
    bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
    int64_t max_trip = std::numeric_limits<int64_t>::max();
    bool cond = true;
    if (has_m) {
      INGOT_RETURN_IF_ERROR(read_single(ctx.input(0), DType::kInt64, "M"));
      max_trip = ctx.input(0).data<int64_t>()[0];
    }
    if (has_cond) {
      INGOT_RETURN_IF_ERROR(read_single(ctx.input(1), DType::kBool, "cond"));
      cond = ctx.input(1).data<bool>()[0];
    }
    // Without a cond input the body's cond_out is ignored (a for loop), except when there is
    // no trip count either: then it is the only way the loop can end.
    bool use_cond_out = has_cond || !has_m;

    std::vector<Tensor> carried;
    for (int i = 0; i < n_carried_; ++i) carried.push_back(ctx.input(2 + i));
    std::vector<std::vector<Tensor>> scans(static_cast<size_t>(n_scan_));
    const size_t want_outs = size_t(1 + n_carried_ + n_scan_);

    int64_t it = 0;
    for (; it < max_trip && cond; ++it) {
      std::vector<Tensor> ins;
      ins.reserve(want_outs + 1);
      Tensor iter(DType::kInt64, {});
      iter.data<int64_t>()[0] = it;
      Tensor cin(DType::kBool, {});
      cin.data<bool>()[0] = cond;
      ins.push_back(std::move(iter));
      ins.push_back(std::move(cin));
      for (auto& c : carried) ins.push_back(c);
      auto outs = ctx.run_subgraph(*body, ins);
      if (!outs) return outs.status().with_context("iteration " + std::to_string(it) + ": ");
      if (outs->size() != want_outs) {
        return invalid_model("body graph gave " + num(outs->size()) + " outputs, expected " + num(want_outs));
      }
      const Tensor& cout = (*outs)[0];
      if (cout.dtype() != DType::kBool || cout.numel() != 1) {
        return invalid_model("body output 0 (cond_out) must be a single bool, got " + dtype_name(cout.dtype()) + " " +
                             shape_str(cout.shape()));
      }
      if (use_cond_out) cond = cout.data<bool>()[0];
      for (int i = 0; i < n_carried_; ++i) {
        Tensor& v = (*outs)[size_t(1 + i)];
        if (v.dtype() != carried[size_t(i)].dtype()) {
          return invalid_model("loop-carried value " + std::to_string(i) + " enters as " +
                               dtype_name(carried[size_t(i)].dtype()) + " but the body returns " + dtype_name(v.dtype()));
        }
        carried[size_t(i)] = std::move(v);
      }
      for (int k = 0; k < n_scan_; ++k) {
        Tensor& v = (*outs)[size_t(1 + n_carried_ + k)];
        auto& list = scans[size_t(k)];
        if (!dtype_is_supported(v.dtype()) || v.dtype() == DType::kString) {
          return unsupported("scan output " + std::to_string(k) + " has dtype " + dtype_name(v.dtype()));
        }
        DType decl = scan_dtypes_[size_t(k)];
        if (decl != DType::kUndefined && v.dtype() != decl) {
          return invalid_model("scan output " + std::to_string(k) + " is " + dtype_name(v.dtype()) +
                               " but the body declares " + dtype_name(decl));
        }
        if (!list.empty() && (v.shape() != list[0].shape() || v.dtype() != list[0].dtype())) {
          return invalid_model("scan output " + std::to_string(k) + " is " + dtype_name(v.dtype()) + " " +
                               shape_str(v.shape()) + " in iteration " + std::to_string(it) + " but was " +
                               dtype_name(list[0].dtype()) + " " + shape_str(list[0].shape()) + " before");
        }
        list.push_back(std::move(v));
      }
    }

    for (int i = 0; i < n_carried_; ++i)
      if (ctx.has_output(i)) ctx.set_output(i, carried[size_t(i)]);
    for (int k = 0; k < n_scan_; ++k) {
      int o = n_carried_ + k;
      if (!ctx.has_output(o)) continue;
      const auto& list = scans[size_t(k)];
      if (list.empty()) {
        DType dt = scan_dtypes_[size_t(k)];
        if (dt == DType::kUndefined) dt = DType::kFloat32;
        ctx.allocate_output(o, dt, empty_shapes_[size_t(k)]);
        continue;
      }
      Shape s{int64_t(list.size())};
      s.insert(s.end(), list[0].shape().begin(), list[0].shape().end());
      Tensor& out = ctx.allocate_output(o, list[0].dtype(), s);
      size_t bytes = list[0].nbytes();
      auto* dst = static_cast<uint8_t*>(out.raw());
      for (size_t j = 0; j < list.size(); ++j)
        if (bytes) std::memcpy(dst + j * bytes, list[j].raw(), bytes);
    }
    return Status::ok();
  }

 private:
  int n_carried_ = 0, n_scan_ = 0;
  std::vector<DType> scan_dtypes_;
  std::vector<Shape> empty_shapes_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", Loop, LoopKernel);

}  // namespace ingot
