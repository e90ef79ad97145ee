// fuse_output_cast: after fp16/bf16 conversion the float32 output Cast of a half-precision
// ingot.FusedMatMul is folded into the product (output_dtype = float32), the output keeps its
// name and dtype and stays within the half-precision tolerance of the float32 graph; the Cast
// stays where the product has another reader or the pass is disabled by name.
#include <gtest/gtest.h>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

// Casts to float32 (the input's Cast to half precision is not one).
int float32_casts(const Model& m) {
  int n = 0;
  for (const Node& node : m.graph.nodes)
    n += node.op_type == "Cast" && node.attrs.get_int("to", -1) == int64_t(DType::kFloat32);
  return n;
}

const Node* find_op(const Model& m, const std::string& op) {
  for (const Node& node : m.graph.nodes)
    if (node.op_type == op) return &node;
  return nullptr;
}

// y = x · W + b over an odd width (the LM head's situation); `second_reader`: y also feeds a
// Relu whose result is a second output.
Model linear_model(bool second_reader) {
  GraphBuilder b("test:fuse_output_cast");
  ValueId x = b.input("x", DType::kFloat32, {3, 16});
  ValueId w = b.constant("W", random_tensor({16, 37}, 1));
  ValueId bias = b.constant("b", random_tensor({37}, 2));
  ValueId y = b.node("Add", {b.node("MatMul", {x, w}, "xw"), bias}, "y");
  b.output(y);
  if (second_reader) b.output(b.node("Relu", {y}, "r"));
  return b.m;
}

std::vector<NamedTensor> run(const Model& m, const EngineOptions& o, const Tensor& x) {
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  auto out = (*e)->create_context()->run({{"x", x}});
  EXPECT_TRUE(out.has_value()) << out.status().message();
  return out ? *out : std::vector<NamedTensor>{};
}

TEST(FuseOutputCast, HalfProductWritesFloat32Output) {
  const Model m = linear_model(false);
  const Tensor x = random_tensor({3, 16}, 3);
  EngineOptions fp32;
  const auto ref = run(m, fp32, x);
  EngineOptions o;
  o.precision = "fp16";
  auto e = Engine::from_model(m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const Model& opt = (*e)->model();
  EXPECT_EQ(float32_casts(opt), 0);
  const Node* mm = find_op(opt, "FusedMatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->attrs.get_int("output_dtype", 0), int64_t(DType::kFloat32));
  EXPECT_EQ(opt.graph.value(mm->outputs[0]).name, "y");
  const auto got = run(m, o, x);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].name, "y");
  EXPECT_EQ(got[0].tensor.dtype(), DType::kFloat32);
  EXPECT_LT(max_abs_diff(got[0].tensor, ref[0].tensor), 1e-2);
}

// bf16 engines compute output producers in float32 (keep_output_producers_fp32): no Cast to fold.
TEST(FuseOutputCast, Bf16OutputProducersStayFloat32) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "bf16 engines need AVX-512, which this CPU lacks";
  EngineOptions o;
  o.precision = "bf16";
  auto e = Engine::from_model(linear_model(false), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  EXPECT_EQ(float32_casts((*e)->model()), 0);
  const Node* mm = find_op((*e)->model(), "FusedMatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->attrs.get_int("output_dtype", 0), 0);
}

TEST(FuseOutputCast, FloatGraphsAreUntouched) {
  EngineOptions o;
  auto e = Engine::from_model(linear_model(false), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const Node* mm = find_op((*e)->model(), "FusedMatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->attrs.get_int("output_dtype", 0), 0);
}

TEST(FuseOutputCast, CastStaysWhenTheProductHasAnotherReader) {
  EngineOptions o;
  o.precision = "fp16";
  auto e = Engine::from_model(linear_model(true), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const Node* mm = find_op((*e)->model(), "FusedMatMul");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->attrs.get_int("output_dtype", 0), 0);
  EXPECT_EQ(float32_casts((*e)->model()), 2);  // y's and r's
}

TEST(FuseOutputCast, DisabledByName) {
  EngineOptions o;
  o.precision = "fp16";
  o.disabled_passes = {"fuse_output_cast"};
  auto e = Engine::from_model(linear_model(false), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  EXPECT_EQ(float32_casts((*e)->model()), 1);
  bool reported = false;
  for (const PassReport& r : (*e)->pass_reports()) reported |= r.name == "fuse_output_cast" && r.disabled;
  EXPECT_TRUE(reported);
}

TEST(FuseOutputCast, KernelRejectsOtherOutputDtypes) {
  GraphBuilder b("test:fuse_output_cast_attr");
  ValueId x = b.input("x", DType::kFloat32, {2, 4});
  ValueId w = b.constant("W", random_tensor({4, 3}, 4));
  Attributes a;
  a.set("output_dtype", int_attr(int64_t(DType::kFloat16)));
  Node n;
  n.op_type = "FusedMatMul";
  n.domain = "ingot";
  n.name = "mm";
  n.inputs = {x, w};
  n.outputs = {b.m.graph.intern("y")};
  n.attrs = a;
  b.m.graph.nodes.push_back(n);
  b.m.opsets["ingot"] = 1;
  b.output(n.outputs[0]);
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(b.m, o);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("output_dtype"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace ingot
