// y = act(x · W + bias) on cuBLASLt as the CUDA FusedMatMul computes it (gemm.cc says why):
// ReLU in the epilogue; GELU (either form) in the epilogue's tanh form for float16/bfloat16, and
// exactly in an in-place pass after the product for float32; Tanh in a pass after. For a fused
// op whose composed path must round where the unfused graph did (ClassifierHead).
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/gemm_impl.h"
#include "ingot/dtype.h"
#include "ir/classifier_head_attrs.h"

namespace ingot::cuda {

// The elementwise kernels' form of a head activation (kNone maps to kRelu: callers test for it).
PointwiseActivation pointwise_of(HeadActivation a);

// Whether cuBLASLt's epilogue applies `act` for dtype dt (otherwise activated_product runs a pass
// after the product, which a consumer of y may do on load instead).
bool activation_in_epilogue(DType dt, HeadActivation act);

// x [m, k], W [k, n], bias [n] or null, y [m, n], all of dtype dt, row-major. Errors start
// with `op`.
Status activated_product(const CudaHandles& handles, DType dt, const void* x, const void* w,
                         const void* bias, int64_t m, int64_t n, int64_t k, HeadActivation act, void* y,
                         const char* op);

}  // namespace ingot::cuda
