// fuse_elementwise and the ingot.FusedElementwise CPU kernel: which chains and DAGs become one
// node (BERT's mask chain, Mul -> Add -> Tanh, comparison/Where DAGs), what stays unfused
// (values with several readers, graph outputs, integer arithmetic, more than four inputs), and
// that the fused graph's outputs equal the unfused graph's bit for bit, in fp32 and fp16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "../ops/op_test_util.h"
#include "ir/elementwise_program.h"
#include "../ops/graph_builder.h"

namespace ingot {
namespace {

using namespace ingot::testing;

struct Builder : GraphBuilder {
  Builder() : GraphBuilder("test:fuse_elementwise") {}
};

Attributes one(const std::string& k, Attribute v) {
  Attributes a;
  a.set(k, std::move(v));
  return a;
}

int count_ops(const Model& m, const std::string& op) {
  int n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

const Node* find_op(const Model& m, const std::string& op) {
  for (const Node& node : m.graph.nodes)
    if (node.op_type == op) return &node;
  return nullptr;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), size_t(a.numel()) * dtype_size(a.dtype())) == 0;
}

// Runs `model` with every pass and with all but fuse_elementwise; expects bit-identical
// outputs. Returns the fully optimized model for structural checks.
Model check_bit_identical(const Model& model, const std::map<std::string, Tensor>& feeds,
                          const std::string& precision = "fp32") {
  EngineOptions without;
  without.disabled_passes = {"fuse_elementwise"};
  without.precision = precision;
  EngineOptions with;
  with.precision = precision;
  auto ref = Engine::from_model(model, without);
  auto opt = Engine::from_model(model, with);
  EXPECT_TRUE(ref.has_value()) << ref.status().message();
  EXPECT_TRUE(opt.has_value()) << opt.status().message();
  if (!ref || !opt) return {};
  auto a = (*ref)->create_context()->run(feeds);
  auto b = (*opt)->create_context()->run(feeds);
  EXPECT_TRUE(a.has_value()) << a.status().message();
  EXPECT_TRUE(b.has_value()) << b.status().message();
  if (a && b) {
    EXPECT_EQ(a->size(), b->size());
    for (size_t i = 0; i < std::min(a->size(), b->size()); ++i) {
      EXPECT_EQ((*a)[i].name, (*b)[i].name);
      EXPECT_TRUE(same_bits((*a)[i].tensor, (*b)[i].tensor)) << (*a)[i].name << " (" << precision
                                                             << "): max abs diff "
                                                             << max_abs_diff((*a)[i].tensor, (*b)[i].tensor);
    }
  }
  return (*opt)->model();
}

Tensor mask_tensor(Shape shape, uint32_t seed) {
  Tensor r = random_tensor(shape, seed);
  Tensor t(DType::kInt64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = r.data<float>()[i] > 0 ? 1 : 0;
  return t;
}

// BERT: extended = (1 - mask[:, None, None, :].float()) * finfo.min; scores + extended.
Model mask_model(bool with_scores) {
  Builder b;
  ValueId mask = b.input("mask", DType::kInt64, {2, 1, 1, 7});
  ValueId f = b.node("Cast", {mask}, "maskf", one("to", int_attr(int64_t(DType::kFloat32))));
  ValueId inv = b.node("Sub", {b.scalar("one", 1.0f), f}, "inv");
  ValueId ext = b.node("Mul", {inv, b.scalar("min", -3.4028234663852886e38f)}, "ext");
  if (!with_scores) {
    b.output(ext);
    return b.m;
  }
  ValueId scores = b.input("scores", DType::kFloat32, {2, 3, 5, 7});
  ValueId sum = b.node("Add", {scores, ext}, "sum");
  b.output(b.node("Softmax", {sum}, "probs", one("axis", int_attr(-1))));
  return b.m;
}

TEST(FuseElementwise, BertMaskChainIsOneNode) {
  std::map<std::string, Tensor> feeds = {{"mask", mask_tensor({2, 1, 1, 7}, 1)}};
  Model opt = check_bit_identical(mask_model(false), feeds);
  ASSERT_EQ(opt.graph.nodes.size(), 1u);
  const Node& f = opt.graph.nodes[0];
  EXPECT_EQ(f.op_type, "FusedElementwise");
  EXPECT_EQ(f.domain, "ingot");
  EXPECT_EQ(f.inputs.size(), 3u);
  EXPECT_EQ(f.attrs.get_ints("program").size(), 3u * kEwFieldsPerStep);
  EXPECT_EQ(opt.graph.value(opt.graph.outputs[0]).name, "ext");
  check_bit_identical(mask_model(false), feeds, "fp16");
}

TEST(FuseElementwise, MaskChainTakesTheScoresAdd) {
  std::map<std::string, Tensor> feeds = {{"mask", mask_tensor({2, 1, 1, 7}, 1)},
                                         {"scores", random_tensor({2, 3, 5, 7}, 2, -4, 4)}};
  Model opt = check_bit_identical(mask_model(true), feeds);
  EXPECT_EQ(count_ops(opt, "FusedElementwise"), 1);
  EXPECT_EQ(count_ops(opt, "Add") + count_ops(opt, "Mul") + count_ops(opt, "Sub") + count_ops(opt, "Cast"), 0);
  EXPECT_EQ(find_op(opt, "FusedElementwise")->inputs.size(), 4u);
  check_bit_identical(mask_model(true), feeds, "fp16");
}

Model mul_add_tanh() {
  Builder b;
  ValueId x = b.input("x", DType::kFloat32, {3, 5, 8});
  ValueId y = b.node("Mul", {x, b.constant("scale", random_tensor({8}, 7))}, "scaled");
  y = b.node("Add", {b.scalar("shift", 0.25f), y}, "shifted");
  b.output(b.node("Tanh", {y}, "y"));
  return b.m;
}

TEST(FuseElementwise, MulAddTanhChain) {
  std::map<std::string, Tensor> feeds = {{"x", random_tensor({3, 5, 8}, 3, -3, 3)}};
  Model opt = check_bit_identical(mul_add_tanh(), feeds);
  ASSERT_EQ(opt.graph.nodes.size(), 1u);
  EXPECT_EQ(opt.graph.nodes[0].op_type, "FusedElementwise");
  check_bit_identical(mul_add_tanh(), feeds, "fp16");
}

// The shapes of the GPU test of the same chain, scalar and size-1 broadcasts included, in every
// precision: the pass must fuse or leave each one, never fail.
TEST(FuseElementwise, MulAddTanhWithBroadcastInputs) {
  for (auto [xs, ws] : std::vector<std::pair<Shape, Shape>>{
           {{3, 5, 8}, {8}}, {{7, 13, 1}, {13, 1}}, {{1}, {}}, {{2, 3, 33, 9}, {3, 1, 9}}}) {
    Builder b;
    ValueId x = b.input("x", DType::kFloat32, xs);
    ValueId w = b.input("w", DType::kFloat32, ws);
    ValueId y = b.node("Mul", {x, w}, "scaled");
    y = b.node("Add", {b.scalar("shift", 0.25f), y}, "shifted");
    b.output(b.node("Tanh", {y}, "y"));
    std::map<std::string, Tensor> feeds = {{"x", random_tensor(xs, 3, -3, 3)}, {"w", random_tensor(ws, 4)}};
    for (const char* precision : {"fp32", "fp16", "bf16"}) {
      if (std::string(precision) == "bf16" && !cpu_has_avx512()) continue;  // no bf16 engines here
      SCOPED_TRACE(shape_str(xs) + " * " + shape_str(ws) + " " + precision);
      Model opt = check_bit_identical(b.m, feeds, precision);
      EXPECT_EQ(count_ops(opt, "FusedElementwise"), 1);
    }
  }
}

TEST(FuseElementwise, EveryOpMatchesItsNode) {
  // Two DAGs covering every opcode: float math into a Where on comparisons, and bool logic.
  Builder b;
  ValueId x = b.input("x", DType::kFloat32, {4, 9});
  ValueId z = b.input("z", DType::kFloat32, {9});
  ValueId c = b.input("c", DType::kBool, {4, 1});
  ValueId i = b.input("i", DType::kInt32, {4, 9});
  auto n = [&](const char* op, std::vector<ValueId> ins, const std::string& out, Attributes a = {}) {
    return b.node(op, std::move(ins), out, std::move(a));
  };
  Attributes hs;
  hs.set("alpha", float_attr(0.3f));
  hs.set("beta", float_attr(0.4f));
  // float chain: 4 inputs x, z, i and c are used across the groups below
  ValueId a1 = n("Sqrt", {n("Abs", {x}, "abs")}, "sqrt");
  ValueId a2 = n("Log", {n("Exp", {a1}, "exp")}, "log");
  ValueId a3 = n("Reciprocal", {n("Add", {a2, b.scalar("eps", 0.5f)}, "add")}, "rec");
  ValueId a4 = n("Erf", {n("Sigmoid", {n("Neg", {a3}, "neg")}, "sig")}, "erf");
  ValueId a5 = n("HardSwish", {n("HardSigmoid", {a4}, "hsig", hs)}, "hsw");
  ValueId a6 = n("LeakyRelu", {n("Relu", {n("Sub", {a5, z}, "sub")}, "relu")}, "lrelu", one("alpha", float_attr(0.07f)));
  ValueId a7 = n("Div", {n("Max", {a6, z}, "max"), n("Min", {x, z}, "min")}, "div");
  b.output(n("Tanh", {a7}, "float_out"));
  // bool logic: comparisons, Not/And/Or, Where, Cast to and from bool and from int32
  ValueId l1 = n("Less", {x, z}, "lt");
  ValueId l2 = n("GreaterOrEqual", {x, z}, "ge");
  ValueId l3 = n("Or", {n("Not", {l1}, "not"), n("And", {l2, c}, "and")}, "or");
  ValueId l4 = n("Cast", {i}, "icast", one("to", int_attr(int64_t(DType::kFloat32))));
  ValueId l5 = n("Where", {l3, l4, x}, "where");
  ValueId l6 = n("Equal", {n("Cast", {l5}, "tobool", one("to", int_attr(int64_t(DType::kBool)))), c}, "eq");
  ValueId l7 = n("Greater", {n("Cast", {l6}, "tofloat", one("to", int_attr(int64_t(DType::kFloat32)))), x}, "gt");
  b.output(n("LessOrEqual", {n("Cast", {l7}, "tofloat2", one("to", int_attr(int64_t(DType::kFloat32)))), z}, "bool_out"));

  Tensor it(DType::kInt32, {4, 9});
  for (int64_t k = 0; k < it.numel(); ++k) it.data<int32_t>()[k] = int32_t(k % 5) - 2;
  Tensor ct(DType::kBool, {4, 1});
  for (int64_t k = 0; k < 4; ++k) ct.data<bool>()[k] = k % 2;
  std::map<std::string, Tensor> feeds = {{"x", random_tensor({4, 9}, 5, -3, 3)},
                                         {"z", random_tensor({9}, 6, -1, 1)},
                                         {"c", ct},
                                         {"i", it}};
  Model opt = check_bit_identical(b.m, feeds);
  EXPECT_GE(count_ops(opt, "FusedElementwise"), 4);
  EXPECT_LE(opt.graph.nodes.size(), 10u);  // from 31
  check_bit_identical(b.m, feeds, "fp16");
}

TEST(FuseElementwise, StopsAtValuesWithSeveralReadersAndGraphOutputs) {
  Builder b;
  ValueId x = b.input("x", DType::kFloat32, {6, 4});
  ValueId t = b.node("Mul", {x, b.scalar("two", 2.0f)}, "t");  // read by Tanh and Sigmoid
  ValueId s = b.node("Add", {b.node("Tanh", {t}, "th"), b.node("Sigmoid", {t}, "sg")}, "s");
  b.output(s);
  ValueId r = b.node("Relu", {x}, "r");  // a graph output read by Neg too
  b.output(r);
  b.output(b.node("Neg", {r}, "nr"));
  Model opt = check_bit_identical(b.m, {{"x", random_tensor({6, 4}, 8, -2, 2)}});
  EXPECT_EQ(count_ops(opt, "Mul"), 1);
  EXPECT_EQ(count_ops(opt, "Relu"), 1);
  EXPECT_EQ(count_ops(opt, "Neg"), 1);
  ASSERT_EQ(count_ops(opt, "FusedElementwise"), 1);
  const Node* f = find_op(opt, "FusedElementwise");
  EXPECT_EQ(f->inputs.size(), 1u);  // t, read by two steps
  EXPECT_EQ(f->attrs.get_ints("program").size(), 3u * kEwFieldsPerStep);
}

TEST(FuseElementwise, LeavesIntegerArithmeticAndCapsInputs) {
  {  // int64 Add -> Mul stays: integer arithmetic is not fused
    Builder b;
    ValueId x = b.input("x", DType::kInt64, {5});
    Tensor one_i(DType::kInt64, {});
    one_i.data<int64_t>()[0] = 3;
    ValueId c = b.constant("three", one_i);
    b.output(b.node("Mul", {b.node("Add", {x, c}, "a"), c}, "m"));
    Model opt = check_bit_identical(b.m, {{"x", mask_tensor({5}, 9)}});
    EXPECT_EQ(count_ops(opt, "FusedElementwise"), 0);
  }
  {  // six distinct inputs: the chain splits so no group reads more than four
    Builder b;
    std::vector<ValueId> in;
    std::map<std::string, Tensor> feeds;
    for (int k = 0; k < 6; ++k) {
      std::string name = "x" + std::to_string(k);
      in.push_back(b.input(name, DType::kFloat32, {3, 4}));
      feeds[name] = random_tensor({3, 4}, uint32_t(10 + k));
    }
    ValueId y = in[0];
    for (int k = 1; k < 6; ++k) y = b.node(k % 2 ? "Add" : "Mul", {y, in[size_t(k)]}, "y" + std::to_string(k));
    b.output(y);
    Model opt = check_bit_identical(b.m, feeds);
    EXPECT_GE(count_ops(opt, "FusedElementwise"), 1);
    for (const Node& n : opt.graph.nodes) EXPECT_LE(n.inputs.size(), size_t(kEwMaxInputs));
    EXPECT_LT(opt.graph.nodes.size(), 5u);
  }
}

TEST(FuseElementwise, KernelServesOtherShapesThanTheBoundOnes) {
  // Declared dims unknown: the pass fuses on probe shapes; the kernel broadcasts at run time.
  Builder b;
  ValueId x = b.input("x", DType::kFloat32, {2, 8});
  b.m.graph.value(x).shape = SymShape{Dim{-1, "batch"}, Dim{8, {}}};
  ValueId y = b.node("Mul", {x, b.constant("w", random_tensor({8}, 3))}, "m");
  b.output(b.node("Sigmoid", {b.node("Add", {y, b.scalar("c", 1.5f)}, "a")}, "y"));
  for (int64_t batch : {1, 5, 33}) {
    Model opt = check_bit_identical(b.m, {{"x", random_tensor({batch, 8}, 4, -5, 5)}});
    EXPECT_EQ(count_ops(opt, "FusedElementwise"), 1);
  }
}

TEST(FuseElementwise, ProgramParsingRejectsBadPrograms) {
  Node n;
  n.op_type = "FusedElementwise";
  n.domain = "ingot";
  n.inputs = {0, 1};
  EwProgram p;
  p.num_inputs = 2;
  EwStep s;
  s.op = EwOp::kAdd;
  s.in[0] = 0;
  s.in[1] = 1;
  p.steps.push_back(s);
  set_ew_program(p, n.attrs);
  ASSERT_TRUE(parse_ew_program(n).has_value());
  s.in[1] = 3;  // a later step's slot
  p.steps[0] = s;
  set_ew_program(p, n.attrs);
  EXPECT_FALSE(parse_ew_program(n).has_value());
  // integers only through casts; mixed float types refused
  p.steps[0].in[1] = 1;
  set_ew_program(p, n.attrs);
  auto parsed = parse_ew_program(n);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_FALSE(type_ew_program(*parsed, {DType::kInt64, DType::kFloat32}).has_value());
  EXPECT_FALSE(type_ew_program(*parsed, {DType::kFloat16, DType::kFloat32}).has_value());
  EXPECT_TRUE(type_ew_program(*parsed, {DType::kBFloat16, DType::kBFloat16}).has_value());
}

}  // namespace
}  // namespace ingot
