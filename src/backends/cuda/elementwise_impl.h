// Launchers of the elementwise CUDA kernels (device code in elementwise_*.cu), shared with the
// kernel classes in elementwise.cc. Plain data only: raw device pointers, DTypes, a broadcast
// geometry computed on the host; each returns the launch's cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ingot/dtype.h"
#include "ingot/tensor.h"

namespace ingot::cuda::ew {

// Most dims a broadcast keeps after merging; the kernels index with one divmod per dim.
constexpr int kMaxRank = 8;
// Most operands of one broadcast kernel (Where's condition, X and Y).
constexpr int kMaxOperands = 3;

// Numpy broadcast of up to kMaxOperands inputs onto the output, with adjacent dims merged
// wherever every operand is contiguous across them (so [B,S,H] + [H] is 2-D and a same-shape
// op 1-D). Dims run innermost first; an operand's stride is 0 along the dims it broadcasts.
// Merging keeps every operand's innermost stride 0 or 1, which the vectorised loads rely on.
struct Broadcast {
  int rank = 0;
  int64_t numel = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxOperands][kMaxRank] = {};
};

// Fills `b` for inputs `ins[0..n)` broadcast to `out`; false when more than kMaxRank dims
// remain after merging. No allocation: it runs in compute() on every call.
bool make_broadcast(const Shape* const* ins, int n, const Shape& out, Broadcast& b);

enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kMod, kFMod, kPow, kMax, kMin, kPRelu, kShiftLeft, kShiftRight,
  // bool output
  kEqual, kLess, kGreater, kLessEqual, kGreaterEqual, kAnd, kOr, kXor,
};

// out = op(a, b) with broadcasting. ta == tb except for kPow, whose exponent may also be
// int64 (integer bases) or float64 (any base): the form the Pow kernel converts it to.
cudaError_t launch_binary(BinaryOp op, DType ta, DType tb, const void* a, const void* b, void* out,
                          const Broadcast& g, cudaStream_t stream);

// out = condition ? x : y with a three-way broadcast; moves elements of `elem_bytes` bytes.
cudaError_t launch_where(size_t elem_bytes, const bool* cond, const void* x, const void* y, void* out,
                         const Broadcast& g, cudaStream_t stream);

enum class UnaryOp {
  kNeg, kAbs, kSign, kRelu, kNot,
  kSqrt, kReciprocal, kExp, kLog, kErf, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh,
  kAcosh, kAtanh, kFloor, kCeil, kRound, kSigmoid, kTanh, kSoftplus, kSoftsign, kMish, kHardSwish,
  kGeluErf, kGeluTanh,
  kLeakyRelu,        // a = alpha
  kElu,              // a = alpha
  kSelu,             // a = alpha, b = gamma
  kCelu,             // a = alpha
  kHardSigmoid,      // a = alpha, b = beta
  kThresholdedRelu,  // a = alpha
  kShrink,           // a = lambd, b = bias
  kDivideBy,         // a = divisor (Mean's last step)
  // bool output
  kIsNaN,
  kIsInf,            // a != 0: detect +inf, b != 0: detect -inf
};

// Attributes of a unary op, converted on the device to the op's compute type.
struct UnaryParams {
  double a = 0, b = 0;
};

// y[i] = op(x[i]) over n contiguous elements of dtype t.
cudaError_t launch_unary(UnaryOp op, DType t, UnaryParams p, const void* x, void* y, int64_t n,
                         cudaStream_t stream);

// Clip bounds in the compute type (float for float16/bfloat16, else the element type), as
// raw bits: a device pointer (an element of the input's dtype) wins over the bits.
struct ClipBounds {
  uint64_t lo_bits = 0, hi_bits = 0;
  const void* lo = nullptr;
  const void* hi = nullptr;
};

cudaError_t launch_clip(DType t, const ClipBounds& bounds, const void* x, void* y, int64_t n, cudaStream_t stream);

// y[i] = x[i] converted from `from` to `to` (from != to) with the CPU kernel's rules.
cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, cudaStream_t stream);

}  // namespace ingot::cuda::ew
