#include "backends/cuda/activated_product.h"

#include <string>

#include "backends/cuda/lt_gemm.h"

namespace ingot::cuda {

PointwiseActivation pointwise_of(HeadActivation a) {
  switch (a) {
    case HeadActivation::kTanh: return PointwiseActivation::kTanh;
    case HeadActivation::kGeluErf: return PointwiseActivation::kGeluErf;
    case HeadActivation::kGeluTanh: return PointwiseActivation::kGeluTanh;
    default: return PointwiseActivation::kRelu;
  }
}

bool activation_in_epilogue(DType dt, HeadActivation act) {
  return act == HeadActivation::kRelu ||
         (dt != DType::kFloat32 && (act == HeadActivation::kGeluErf || act == HeadActivation::kGeluTanh));
}

Status activated_product(const CudaHandles& handles, DType dt, const void* x, const void* w,
                         const void* bias, int64_t m, int64_t n, int64_t k, HeadActivation act, void* y,
                         const char* op) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k;
  d.dtype = dt;
  d.bias = bias;
  const bool in_epilogue = activation_in_epilogue(dt, act);
  if (in_epilogue) d.activation = act == HeadActivation::kRelu ? GemmActivation::kRelu : GemmActivation::kGeluTanh;
  const bool after = act != HeadActivation::kNone && !in_epilogue;
  INGOT_RETURN_IF_ERROR(lt_gemm(handles, d, x, w, y));
  if (!after) return Status::ok();
  return cuda_status(launch_activation_inplace(y, m * n, pointwise_of(act), dt, handles.stream),
                     (std::string(op) + ": activation").c_str());
}

}  // namespace ingot::cuda
