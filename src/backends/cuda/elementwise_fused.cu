// ingot.FusedElementwise on the GPU: one thread per output element loads its inputs through
// the broadcast offsets, runs the program in registers (one switch per step; every thread of
// a warp runs the same step, so the switch never diverges) and stores only the result. The
// steps are the CPU reference's expressions with CUDA's full-precision math (what the unfused
// elementwise kernels use), each result rounded to its dtype before the next step reads it.
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/elementwise_device.cuh"
#include "backends/cuda/elementwise_fused_impl.h"

namespace ingot::cuda::ewf {
namespace {

using ew::std_max;
using ew::std_min;

enum class Load : int8_t { kF32, kF16, kBF16, kBool, kI32, kI64 };

template <class I>
struct Params {
  ew::Geometry<I, kEwMaxInputs> g;
  const void* in[kEwMaxInputs];
  Load load[kEwMaxInputs];
  int num_inputs, num_steps;
  EwStep steps[kEwMaxSteps];
  void* out;
  bool bool_out;
};

__device__ __forceinline__ float load_as_float(const void* p, Load l, int64_t i) {
  switch (l) {
    case Load::kF32: return static_cast<const float*>(p)[i];
    case Load::kF16: return __half2float(static_cast<const __half*>(p)[i]);
    case Load::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case Load::kBool: return static_cast<const bool*>(p)[i] ? 1.0f : 0.0f;
    case Load::kI32: return __int2float_rn(static_cast<const int32_t*>(p)[i]);
    case Load::kI64: return __ll2float_rn(static_cast<const long long*>(p)[i]);
  }
  return 0.0f;
}

__device__ __forceinline__ float eval(const EwStep& s, float x, float y, float z) {
  switch (s.op) {
    case EwOp::kNeg: return -x;
    case EwOp::kAbs: return fabsf(x);
    case EwOp::kSqrt: return sqrtf(x);
    case EwOp::kExp: return expf(x);
    case EwOp::kLog: return logf(x);
    case EwOp::kReciprocal: return 1.0f / x;
    case EwOp::kRelu: return x > 0.0f ? x : 0.0f;
    case EwOp::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case EwOp::kTanh: return tanhf(x);
    case EwOp::kErf: return erff(x);
    case EwOp::kHardSigmoid: return std_max(0.0f, std_min(1.0f, s.p0 * x + s.p1));
    case EwOp::kHardSwish: return x * std_max(0.0f, std_min(1.0f, x / 6.0f + 0.5f));
    case EwOp::kLeakyRelu: return x < 0.0f ? s.p0 * x : x;
    case EwOp::kAdd: return x + y;
    case EwOp::kSub: return x - y;
    case EwOp::kMul: return x * y;
    case EwOp::kDiv: return x / y;
    case EwOp::kMax: return (x > y || x != x) ? x : y;  // NaN from either side, as on the CPU
    case EwOp::kMin: return (x < y || x != x) ? x : y;
    case EwOp::kEqual: return x == y ? 1.0f : 0.0f;
    case EwOp::kLess: return x < y ? 1.0f : 0.0f;
    case EwOp::kGreater: return x > y ? 1.0f : 0.0f;
    case EwOp::kLessEqual: return x <= y ? 1.0f : 0.0f;
    case EwOp::kGreaterEqual: return x >= y ? 1.0f : 0.0f;
    case EwOp::kNot: return x != 0.0f ? 0.0f : 1.0f;
    case EwOp::kAnd: return (x != 0.0f && y != 0.0f) ? 1.0f : 0.0f;
    case EwOp::kOr: return (x != 0.0f || y != 0.0f) ? 1.0f : 0.0f;
    case EwOp::kWhere: return x != 0.0f ? y : z;
    case EwOp::kCastFloat: return x;  // integers were loaded as float(v); rounding to T follows
    case EwOp::kCastBool: return x != 0.0f ? 1.0f : 0.0f;
    case EwOp::kCount: break;
  }
  return 0.0f;
}

// A step's result in T (bool results, 0 and 1, are exact in every T).
template <class T>
__device__ __forceinline__ float round_to(float r) {
  if constexpr (std::is_same_v<T, float>) return r;
  else return to_float(from_float<T>(r));
}

template <class T, class I>
__global__ void __launch_bounds__(ew::kThreads) fused_kernel(const Params<I> p) {
  wait_prior_grids();
  allow_dependent_grids();
  const I stride = I(gridDim.x) * ew::kThreads;
  for (I i = I(blockIdx.x) * ew::kThreads + threadIdx.x; i < p.g.numel; i += stride) {
    I off[kEwMaxInputs];
    ew::offsets<I, kEwMaxInputs>(p.g, i, off);
    // Inputs first, then one slot per step: the encoding's slot numbering.
    float regs[kEwMaxInputs + kEwMaxSteps];
#pragma unroll
    for (int k = 0; k < kEwMaxInputs; ++k)
      if (k < p.num_inputs) regs[k] = load_as_float(p.in[k], p.load[k], int64_t(off[k]));
    float r = 0.0f;
#pragma unroll
    for (int s = 0; s < kEwMaxSteps; ++s) {
      if (s >= p.num_steps) break;
      const EwStep& st = p.steps[s];
      const float x = regs[st.in[0]];
      const float y = st.in[1] >= 0 ? regs[st.in[1]] : 0.0f;
      const float z = st.in[2] >= 0 ? regs[st.in[2]] : 0.0f;
      r = round_to<T>(eval(st, x, y, z));
      regs[p.num_inputs + s] = r;
    }
    if (p.bool_out) static_cast<bool*>(p.out)[i] = r != 0.0f;
    else static_cast<T*>(p.out)[i] = from_float<T>(r);
  }
}

Load load_of(DType t) {
  switch (t) {
    case DType::kFloat16: return Load::kF16;
    case DType::kBFloat16: return Load::kBF16;
    case DType::kBool: return Load::kBool;
    case DType::kInt32: return Load::kI32;
    case DType::kInt64: return Load::kI64;
    default: return Load::kF32;
  }
}

template <class I>
cudaError_t launch(const FusedLaunch& f, cudaStream_t stream) {
  Params<I> p{};
  p.g.rank = f.rank;
  p.g.numel = I(f.numel);
  for (int d = 0; d < f.rank; ++d) {
    if constexpr (std::is_same_v<I, uint32_t>) p.g.dims[d] = ew::FastDiv(uint32_t(f.dims[d]));
    else p.g.dims[d] = f.dims[d];
    for (int k = 0; k < kEwMaxInputs; ++k) p.g.strides[k][d] = I(f.strides[k][d]);
  }
  for (int k = 0; k < f.num_inputs; ++k) {
    p.in[k] = f.in[k];
    p.load[k] = load_of(f.in_type[k]);
  }
  p.num_inputs = f.num_inputs;
  p.num_steps = f.num_steps;
  for (int s = 0; s < f.num_steps; ++s) p.steps[s] = f.steps[s];
  p.out = f.out;
  p.bool_out = f.bool_out;
  const unsigned blocks = blocks_for(f.numel, ew::kThreads, INT32_MAX);
  cudaError_t e = cudaErrorInvalidValue;
  dispatch_device_float(f.float_type, [&](auto zero) {
    using T = decltype(zero);
    e = launch_dependent(fused_kernel<T, I>, blocks, ew::kThreads, 0, stream, p);
  });
  return e;
}

}  // namespace

cudaError_t launch_fused_elementwise(const FusedLaunch& f, cudaStream_t stream) {
  if (f.numel == 0) return cudaSuccess;
  // 32-bit indices with multiply-shift division below 2^31 elements (FastDiv's exact range).
  if (f.numel < (int64_t(1) << 31)) return launch<uint32_t>(f, stream);
  return launch<int64_t>(f, stream);
}

}  // namespace ingot::cuda::ewf
