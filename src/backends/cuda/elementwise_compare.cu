// Comparisons (bool output; Equal also on bool) and logical And/Or/Xor with broadcasting.
// A separate file from the arithmetic ops so the two halves compile in parallel.
#include "backends/cuda/elementwise_binary.cuh"

namespace ingot::cuda::ew {
namespace {

#define INGOT_EW_COMPARE(Name, S, expr)                                     \
  struct Name {                                                             \
    static constexpr Set kSet = S;                                          \
    static constexpr bool kBoolOut = true;                                  \
    template <class C> __device__ bool operator()(C a, C b) const { return (expr); } \
  };

INGOT_EW_COMPARE(EqualF, Set::kAll, a == b)
INGOT_EW_COMPARE(LessF, Set::kNumeric, a < b)
INGOT_EW_COMPARE(GreaterF, Set::kNumeric, a > b)
INGOT_EW_COMPARE(LessEqualF, Set::kNumeric, a <= b)
INGOT_EW_COMPARE(GreaterEqualF, Set::kNumeric, a >= b)
INGOT_EW_COMPARE(AndF, Set::kBool, a && b)
INGOT_EW_COMPARE(OrF, Set::kBool, a || b)
INGOT_EW_COMPARE(XorF, Set::kBool, a != b)
#undef INGOT_EW_COMPARE

}  // namespace

cudaError_t launch_compare(BinaryOp op, DType t, const void* a, const void* b, void* out, const Broadcast& g,
                           cudaStream_t stream) {
  switch (op) {
    case BinaryOp::kEqual: return run_same_type(EqualF{}, t, a, b, out, g, stream);
    case BinaryOp::kLess: return run_same_type(LessF{}, t, a, b, out, g, stream);
    case BinaryOp::kGreater: return run_same_type(GreaterF{}, t, a, b, out, g, stream);
    case BinaryOp::kLessEqual: return run_same_type(LessEqualF{}, t, a, b, out, g, stream);
    case BinaryOp::kGreaterEqual: return run_same_type(GreaterEqualF{}, t, a, b, out, g, stream);
    case BinaryOp::kAnd: return run_same_type(AndF{}, t, a, b, out, g, stream);
    case BinaryOp::kOr: return run_same_type(OrF{}, t, a, b, out, g, stream);
    case BinaryOp::kXor: return run_same_type(XorF{}, t, a, b, out, g, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ingot::cuda::ew
