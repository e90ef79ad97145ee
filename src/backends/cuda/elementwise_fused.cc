// ingot.FusedElementwise on CUDA (device code in elementwise_fused.cu). compute() decodes
// nothing: the program was decoded at init; it computes the merged broadcast geometry of the
// inputs on the host (no allocation) and launches one kernel.
#include <string>
#include <vector>

#include "backends/cuda/broadcast_geometry.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/elementwise_fused_impl.h"
#include "ir/elementwise_program.h"

namespace ingot::cuda {
namespace {

class FusedElementwiseKernel : public CudaKernel {
 public:
  Status init(const Node& node, int) override {
    INGOT_ASSIGN_OR_RETURN(prog_, parse_ew_program(node));
    return Status::ok();
  }

  std::string supports(const std::vector<InputMeta>& inputs, const std::vector<OutputMeta>& outputs) const override {
    if (int(inputs.size()) != prog_.num_inputs) return "input count differs from the program's";
    std::vector<DType> types;
    for (const InputMeta& m : inputs) {
      if (!m.present) return "missing input";
      types.push_back(m.dtype);
    }
    auto typing = type_ew_program(prog_, types);
    if (!typing) return typing.status().message();
    if (outputs.empty() || outputs[0].shape.size() > size_t(kEwMaxRank))
      return "output rank above " + std::to_string(kEwMaxRank);
    for (const InputMeta& m : inputs)
      if (m.shape.size() > outputs[0].shape.size()) return "an input of higher rank than the output";
    return {};
  }

  Status compute(CudaComputeContext& ctx) const override {
    ewf::FusedLaunch f;
    f.num_inputs = prog_.num_inputs;
    f.num_steps = int(prog_.steps.size());
    for (int s = 0; s < f.num_steps; ++s) f.steps[s] = prog_.steps[size_t(s)];
    const Shape* shapes[kEwMaxInputs];
    for (int k = 0; k < f.num_inputs; ++k) {
      const Tensor& t = ctx.input(k);
      f.in[k] = t.raw();
      f.in_type[k] = t.dtype();
      shapes[k] = &t.shape();
      if (t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat16 || t.dtype() == DType::kBFloat16)
        f.float_type = t.dtype();
    }
    Tensor& out = ctx.output(0);
    f.out = out.raw();
    f.bool_out = out.dtype() == DType::kBool;
    if (!merge_broadcast(shapes, f.num_inputs, out.shape(), f.rank, f.numel, f.dims, f.strides))
      return internal_error("broadcast of more than " + std::to_string(kEwMaxRank) + " dims");
    INGOT_CUDA_RETURN_IF_ERROR(ewf::launch_fused_elementwise(f, ctx.stream()));
    return Status::ok();
  }

 private:
  EwProgram prog_;
};

}  // namespace

INGOT_REGISTER_CUDA_KERNEL("ingot", FusedElementwise, FusedElementwiseKernel);

}  // namespace ingot::cuda
