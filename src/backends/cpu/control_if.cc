// If: runs then_branch or else_branch on a boolean condition. The branches read outer values
// through captures (resolved by the executor) and may give outputs of different shapes, so
// every output is dynamic.
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace ingot {
namespace {

Status check_tensor_values(const Graph& g, const std::string& what) {
  for (ValueId v : g.outputs) {
    const ValueInfo& vi = g.value(v);
    if (!vi.non_tensor_kind.empty()) {
      return unsupported(what + " output '" + vi.name + "' is a " + vi.non_tensor_kind +
                         "; ingot runs If with tensor outputs only");
    }
  }
  return Status::ok();
}

class IfKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    const Graph* then_g = node.attrs.get_graph("then_branch");
    const Graph* else_g = node.attrs.get_graph("else_branch");
    if (!then_g || !else_g) return invalid_model("needs graph attributes 'then_branch' and 'else_branch'");
    if (node.inputs.size() != 1 || node.inputs[0] == kNoValue) {
      return invalid_model("needs exactly 1 input (cond), got " + std::to_string(node.inputs.size()));
    }
    size_t n = node.outputs.size();
    if (then_g->outputs.size() != n) {
      return invalid_model("then_branch has " + std::to_string(then_g->outputs.size()) +
                           " outputs, but the node has " + std::to_string(n));
    }
    if (else_g->outputs.size() != n) {
      return invalid_model("else_branch has " + std::to_string(else_g->outputs.size()) +
                           " outputs, but the node has " + std::to_string(n));
    }
    if (!then_g->inputs.empty() || !else_g->inputs.empty()) {
      return invalid_model("If branches must not declare inputs");
    }
    INGOT_RETURN_IF_ERROR(check_tensor_values(*then_g, "then_branch"));
    INGOT_RETURN_IF_ERROR(check_tensor_values(*else_g, "else_branch"));
    dtypes_.assign(n, DType::kUndefined);
    for (size_t i = 0; i < n; ++i) {
      DType a = then_g->value(then_g->outputs[i]).dtype, b = else_g->value(else_g->outputs[i]).dtype;
      if (a != DType::kUndefined && b != DType::kUndefined && a != b) {
        return invalid_model("output " + std::to_string(i) + " is " + dtype_name(a) + " in then_branch but " +
                             dtype_name(b) + " in else_branch");
      }
      dtypes_[i] = a != DType::kUndefined ? a : b;
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs input 0 (cond)");
    if (ctx.input_dtype(0) != DType::kBool) {
      return invalid_argument("cond must be bool, got " + dtype_name(ctx.input_dtype(0)));
    }
    if (shape_numel(ctx.input_shape(0)) != 1) {
      return invalid_argument("cond must hold exactly one element, got shape " + shape_str(ctx.input_shape(0)));
    }
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (dtypes_[size_t(i)] != DType::kUndefined) ctx.set_output_dynamic(i, dtypes_[size_t(i)]);
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    if (c.dtype() != DType::kBool || c.numel() != 1) return invalid_argument("cond must be a single bool");
    bool cond = c.data<bool>()[0];
    const char* which = cond ? "then_branch" : "else_branch";
    const Graph* g = ctx.node().attrs.get_graph(which);
    if (!g) return invalid_model(std::string("missing attribute '") + which + "'");
    auto outs = ctx.run_subgraph(*g, {});
    if (!outs) return outs.status().with_context(std::string(which) + ": ");
    if (outs->size() != size_t(ctx.num_outputs())) {
      return invalid_model(std::string(which) + " gave " + std::to_string(outs->size()) + " outputs, expected " +
                           std::to_string(ctx.num_outputs()));
    }
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      Tensor& t = (*outs)[size_t(i)];
      DType want = dtypes_[size_t(i)];
      if (want != DType::kUndefined && t.dtype() != want) {
        return invalid_model(std::string(which) + " output " + std::to_string(i) + " is " + dtype_name(t.dtype()) +
                             " but the branches declare " + dtype_name(want));
      }
      if (ctx.has_output(i)) ctx.set_output(i, std::move(t));
    }
    return Status::ok();
  }

 private:
  std::vector<DType> dtypes_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", If, IfKernel);

}  // namespace ingot
