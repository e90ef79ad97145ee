// The program of an ingot.FusedElementwise node (written by the fuse_elementwise pass, run by
// the CPU and CUDA kernels): a chain or small DAG of elementwise ops evaluated per output
// element, so the intermediates never reach memory.
//
// Encoding, as node attributes:
//   program: ints, kFieldsPerStep per step: [opcode, a, b, c]. a/b/c are operand slots, -1 when
//            the op has fewer operands: slot s < number of node inputs is node input s; slot
//            n_inputs + k is the result of step k (k earlier than the reading step). The last
//            step's result is the node's output.
//   params:  floats, kParamsPerStep per step: [p0, p1], the op's float attributes (LeakyRelu
//            alpha; HardSigmoid alpha, beta), 0 for the others.
// Dtypes are implied, as ONNX's type rules fix them: every float value of the program has one
// float type T (float32, float16 or bfloat16), the dtype of the node's float inputs; comparisons,
// Not/And/Or and CastBool give bool; Where gives its X's kind; CastFloat gives T. Integer
// inputs (int32/int64) may only be read by CastFloat/CastBool. Each step's result is rounded to
// its dtype before the next step reads it, as running the original nodes one by one does.
// Constants stay node inputs, so precision conversion treats them as it treats any input.
#pragma once

#include <cstdint>

namespace ingot {

enum class EwOp : int32_t {
  // T -> T
  kNeg, kAbs, kSqrt, kExp, kLog, kReciprocal, kRelu, kSigmoid, kTanh, kErf,
  kHardSigmoid,  // p0 = alpha, p1 = beta
  kHardSwish,
  kLeakyRelu,    // p0 = alpha
  // T, T -> T
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  // T, T -> bool (kEqual also bool, bool -> bool)
  kEqual, kLess, kGreater, kLessEqual, kGreaterEqual,
  // bool -> bool, bool, bool -> bool
  kNot, kAnd, kOr,
  // bool, X, X -> X (X is T or bool)
  kWhere,
  // T, bool or integer -> T / bool
  kCastFloat, kCastBool,
  kCount,
};

constexpr int kEwFieldsPerStep = 4;
constexpr int kEwParamsPerStep = 2;
constexpr int kEwMaxInputs = 4;
constexpr int kEwMaxSteps = 16;
constexpr int kEwMaxRank = 8;

constexpr int ew_arity(EwOp op) {
  return op == EwOp::kWhere ? 3
         : (op >= EwOp::kAdd && op <= EwOp::kGreaterEqual) || op == EwOp::kAnd || op == EwOp::kOr ? 2
                                                                                                    : 1;
}

// One decoded step.
struct EwStep {
  EwOp op = EwOp::kNeg;
  int32_t in[3] = {-1, -1, -1};
  float p0 = 0, p1 = 0;
};

}  // namespace ingot

#ifndef __CUDACC__
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

// What a program value is: the float type T, bool, or an integer input.
enum class EwKind : uint8_t { kFloat, kBool, kInt };

struct EwProgram {
  int num_inputs = 0;
  std::vector<EwStep> steps;
};

// Decodes and checks the structure of a node's program (slot ranges, arities, step count).
Expected<EwProgram> parse_ew_program(const Node& node);
// The attributes encoding `p` (inverse of parse_ew_program).
void set_ew_program(const EwProgram& p, Attributes& attrs);
// Checks operand kinds against each op's signature for inputs of dtypes `inputs`, and returns
// the float type T (kUndefined when no input is a float) and the output's kind.
struct EwTyping {
  DType float_type = DType::kUndefined;
  EwKind out = EwKind::kFloat;
};
Expected<EwTyping> type_ew_program(const EwProgram& p, const std::vector<DType>& inputs);
const char* ew_op_name(EwOp op);

}  // namespace ingot
#endif
