// Decoding and type checking of ingot.FusedElementwise programs (encoding in the header).
#include "ir/elementwise_program.h"

namespace ingot {

const char* ew_op_name(EwOp op) {
  static const char* const names[] = {
      "Neg", "Abs", "Sqrt", "Exp", "Log", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Erf", "HardSigmoid",
      "HardSwish", "LeakyRelu", "Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "CastFloat", "CastBool"};
  static_assert(sizeof(names) / sizeof(names[0]) == size_t(EwOp::kCount));
  return op >= EwOp::kNeg && op < EwOp::kCount ? names[int(op)] : "?";
}

Expected<EwProgram> parse_ew_program(const Node& node) {
  const std::vector<int64_t> prog = node.attrs.get_ints("program");
  const std::vector<float> params = node.attrs.get_floats("params");
  EwProgram p;
  p.num_inputs = int(node.inputs.size());
  if (p.num_inputs < 1 || p.num_inputs > kEwMaxInputs)
    return invalid_model("needs 1 to " + std::to_string(kEwMaxInputs) + " inputs, got " + std::to_string(p.num_inputs));
  if (prog.empty() || prog.size() % kEwFieldsPerStep != 0)
    return invalid_model("attribute 'program' must hold a multiple of " + std::to_string(kEwFieldsPerStep) + " ints");
  const size_t n = prog.size() / kEwFieldsPerStep;
  if (n > size_t(kEwMaxSteps)) return invalid_model("attribute 'program' has more than " + std::to_string(kEwMaxSteps) + " steps");
  if (params.size() != n * kEwParamsPerStep)
    return invalid_model("attribute 'params' must hold " + std::to_string(kEwParamsPerStep) + " floats per step");
  for (size_t k = 0; k < n; ++k) {
    const int64_t* f = &prog[k * kEwFieldsPerStep];
    if (f[0] < 0 || f[0] >= int64_t(EwOp::kCount))
      return invalid_model("attribute 'program': step " + std::to_string(k) + " has unknown opcode " + std::to_string(f[0]));
    EwStep s;
    s.op = EwOp(f[0]);
    const int arity = ew_arity(s.op);
    for (int j = 0; j < 3; ++j) {
      const int64_t slot = f[1 + j];
      const bool used = j < arity;
      if (!used ? slot != -1 : (slot < 0 || slot >= p.num_inputs + int64_t(k)))
        return invalid_model("attribute 'program': step " + std::to_string(k) + " (" + ew_op_name(s.op) +
                             ") operand " + std::to_string(j) + " has invalid slot " + std::to_string(slot));
      s.in[j] = int32_t(slot);
    }
    s.p0 = params[k * kEwParamsPerStep];
    s.p1 = params[k * kEwParamsPerStep + 1];
    p.steps.push_back(s);
  }
  return p;
}

void set_ew_program(const EwProgram& p, Attributes& attrs) {
  Attribute prog, params;
  prog.kind = Attribute::Kind::kInts;
  params.kind = Attribute::Kind::kFloats;
  for (const EwStep& s : p.steps) {
    prog.ints.insert(prog.ints.end(), {int64_t(s.op), s.in[0], s.in[1], s.in[2]});
    params.floats.insert(params.floats.end(), {s.p0, s.p1});
  }
  attrs.set("program", std::move(prog));
  attrs.set("params", std::move(params));
}

Expected<EwTyping> type_ew_program(const EwProgram& p, const std::vector<DType>& inputs) {
  EwTyping t;
  std::vector<EwKind> kind;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType d = inputs[i];
    if (d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16) {
      if (t.float_type != DType::kUndefined && t.float_type != d)
        return invalid_model("float inputs mix " + dtype_name(t.float_type) + " and " + dtype_name(d));
      t.float_type = d;
      kind.push_back(EwKind::kFloat);
    } else if (d == DType::kBool) {
      kind.push_back(EwKind::kBool);
    } else if (d == DType::kInt32 || d == DType::kInt64) {
      kind.push_back(EwKind::kInt);
    } else {
      return invalid_model("input " + std::to_string(i) + " has dtype " + dtype_name(d) +
                           ", expected float32, float16, bfloat16, bool, int32 or int64");
    }
  }
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const EwStep& s = p.steps[k];
    auto in = [&](int j) { return kind[size_t(s.in[j])]; };
    auto fail = [&] {
      return invalid_model("step " + std::to_string(k) + " (" + ew_op_name(s.op) + ") has operands of the wrong kind");
    };
    EwKind out;
    switch (s.op) {
      case EwOp::kNot:
        if (in(0) != EwKind::kBool) return fail();
        out = EwKind::kBool;
        break;
      case EwOp::kAnd: case EwOp::kOr:
        if (in(0) != EwKind::kBool || in(1) != EwKind::kBool) return fail();
        out = EwKind::kBool;
        break;
      case EwOp::kEqual:
        if (in(0) != in(1) || in(0) == EwKind::kInt) return fail();
        out = EwKind::kBool;
        break;
      case EwOp::kLess: case EwOp::kGreater: case EwOp::kLessEqual: case EwOp::kGreaterEqual:
        if (in(0) != EwKind::kFloat || in(1) != EwKind::kFloat) return fail();
        out = EwKind::kBool;
        break;
      case EwOp::kWhere:
        if (in(0) != EwKind::kBool || in(1) != in(2) || in(1) == EwKind::kInt) return fail();
        out = in(1);
        break;
      case EwOp::kCastFloat: out = EwKind::kFloat; break;
      case EwOp::kCastBool: out = EwKind::kBool; break;
      default:  // unary and binary float ops
        for (int j = 0; j < ew_arity(s.op); ++j)
          if (in(j) != EwKind::kFloat) return fail();
        out = EwKind::kFloat;
        break;
    }
    if (out == EwKind::kFloat && t.float_type == DType::kUndefined)
      return invalid_model("step " + std::to_string(k) + " (" + ew_op_name(s.op) +
                           ") computes a float, but no input is a float to give its type");
    kind.push_back(out);
  }
  t.out = kind.back();
  return t;
}

}  // namespace ingot
