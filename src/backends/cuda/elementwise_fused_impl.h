// Launcher of the ingot.FusedElementwise CUDA kernel (device code in elementwise_fused.cu),
// shared with the kernel class in elementwise_fused.cc. Plain data only: the decoded program,
// raw device pointers and a broadcast geometry computed on the host.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"
#include "ir/elementwise_program.h"

namespace ingot::cuda::ewf {

struct FusedLaunch {
  int num_inputs = 0;
  int num_steps = 0;
  EwStep steps[kEwMaxSteps];
  const void* in[kEwMaxInputs] = {};
  DType in_type[kEwMaxInputs] = {};  // float32/float16/bfloat16/bool/int32/int64
  DType float_type = DType::kFloat32;  // T: every float step rounds to it
  bool bool_out = false;               // else the output is T
  void* out = nullptr;
  // Output dims with adjacent dims merged where every input is contiguous across them,
  // innermost first; strides in elements per input, 0 along broadcast dims.
  int rank = 0;
  int64_t numel = 0;
  int64_t dims[kEwMaxRank] = {};
  int64_t strides[kEwMaxInputs][kEwMaxRank] = {};
};

cudaError_t launch_fused_elementwise(const FusedLaunch& f, cudaStream_t stream);

}  // namespace ingot::cuda::ewf
