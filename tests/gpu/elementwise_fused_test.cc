// ingot.FusedElementwise on CUDA against the CPU reference, through the Engine: graphs the
// fuse_elementwise pass turns into one node (BERT's int64 mask chain, Mul -> Add -> Tanh with
// broadcasting, a comparison/Where DAG with a bool output, every float op), in fp32, fp16 and
// bf16, on odd and broadcast shapes; and a node the CUDA kernel refuses (a 9-D broadcast) that
// still gives the right answer through the CPU fallback.
#include <cmath>
#include <functional>

#include "gpu_test_util.h"
#include "ir/elementwise_program.h"
#include "../ops/graph_builder.h"

namespace ingot::testing {
namespace {

struct Builder : GraphBuilder {
  Builder() : GraphBuilder("test:elementwise_fused") {}
};

Attributes one(const std::string& k, Attribute v) {
  Attributes a;
  a.set(k, std::move(v));
  return a;
}

// How many ingot.FusedElementwise nodes the optimizer leaves in `m` (checked on the CPU, so a
// test that fuses nothing fails instead of testing the unfused kernels).
int fused_nodes(const Model& m) {
  auto e = Engine::from_model(m);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return 0;
  int n = 0;
  for (const Node& node : (*e)->model().graph.nodes) n += node.op_type == "FusedElementwise";
  return n;
}

// fp32 tight; fp16 against the CPU's fp16 engine (the same per-step rounding, so only the
// math functions differ); bf16 against the CPU fp32 result on bf16-rounded inputs.
void check_all_precisions(const Model& m, const std::map<std::string, Tensor>& feeds, const std::string& what) {
  expect_cuda_matches_cpu(m, feeds, 1e-6, 1e-5, what + " fp32");
  expect_cuda_matches_cpu(m, feeds, 1e-6, 1e-5, what + " fp32 no graph", /*cuda_graph=*/false);
  {
    auto ref = run_model_on(m, feeds, "cpu", "fp16");
    auto got = run_model_on(m, feeds, "cuda", "fp16");
    ASSERT_EQ(ref.size(), got.size());
    for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], 2e-3, 1e-2, what + " fp16");
  }
  {
    std::map<std::string, Tensor> rounded;
    for (const auto& [k, t] : feeds) {
      if (t.dtype() != DType::kFloat32) {
        rounded[k] = t;
        continue;
      }
      Tensor r(DType::kFloat32, t.shape());
      for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = float(bfloat16(t.data<float>()[i]));
      rounded[k] = r;
    }
    auto ref = run_model_on(m, rounded, "cpu");
    auto got = run_model_on(m, rounded, "cuda", "bf16");
    ASSERT_EQ(ref.size(), got.size());
    for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], 3e-2, 3e-2, what + " bf16");
  }
}

TEST(CudaFusedElementwise, BertMaskChain) {
  INGOT_REQUIRE_GPU();
  for (Shape s : {Shape{2, 1, 1, 7}, Shape{3, 1, 1, 129}}) {
    Builder b;
    ValueId mask = b.input("mask", DType::kInt64, s);
    ValueId scores = b.input("scores", DType::kFloat32, {s[0], 3, 5, s[3]});
    ValueId f = b.node("Cast", {mask}, "maskf", one("to", int_attr(int64_t(DType::kFloat32))));
    ValueId inv = b.node("Sub", {b.scalar("one", 1.0f), f}, "inv");
    ValueId ext = b.node("Mul", {inv, b.scalar("min", -3.4028234663852886e38f)}, "ext");
    b.output(b.node("Add", {scores, ext}, "sum"));
    ASSERT_EQ(fused_nodes(b.m), 1);
    // Masked positions are about -3.4e38 (fp16/bf16: the constant saturates to the largest finite).
    check_all_precisions(b.m, {{"mask", random_of(DType::kInt64, s, 1, 0, 1)},
                               {"scores", random_of(DType::kFloat32, {s[0], 3, 5, s[3]}, 2, -4, 4)}},
                         "mask " + shape_str(s));
  }
}

TEST(CudaFusedElementwise, MulAddTanhBroadcasts) {
  INGOT_REQUIRE_GPU();
  // row broadcast, column broadcast, odd sizes, and one large enough for many blocks
  for (auto [xs, ws] : std::vector<std::pair<Shape, Shape>>{
           {{3, 5, 8}, {8}}, {{7, 13, 1}, {13, 1}}, {{1}, {}}, {{2, 3, 333, 97}, {3, 1, 97}}}) {
    Builder b;
    ValueId x = b.input("x", DType::kFloat32, xs);
    ValueId w = b.input("w", DType::kFloat32, ws);
    ValueId y = b.node("Mul", {x, w}, "scaled");
    y = b.node("Add", {b.scalar("shift", 0.25f), y}, "shifted");
    b.output(b.node("Tanh", {y}, "y"));
    ASSERT_EQ(fused_nodes(b.m), 1);
    check_all_precisions(b.m, {{"x", random_of(DType::kFloat32, xs, 3, -3, 3)}, {"w", random_of(DType::kFloat32, ws, 4)}},
                         "mul-add-tanh " + shape_str(xs) + " * " + shape_str(ws));
  }
}

TEST(CudaFusedElementwise, EveryOpAndBoolOutputs) {
  INGOT_REQUIRE_GPU();
  Builder b;
  ValueId x = b.input("x", DType::kFloat32, {5, 37});
  ValueId z = b.input("z", DType::kFloat32, {37});
  ValueId c = b.input("c", DType::kBool, {5, 1});
  ValueId i = b.input("i", DType::kInt32, {5, 37});
  auto n = [&](const char* op, std::vector<ValueId> ins, const std::string& out, Attributes a = {}) {
    return b.node(op, std::move(ins), out, std::move(a));
  };
  Attributes hs;
  hs.set("alpha", float_attr(0.3f));
  hs.set("beta", float_attr(0.4f));
  ValueId a1 = n("Sqrt", {n("Abs", {x}, "abs")}, "sqrt");
  ValueId a2 = n("Log", {n("Exp", {a1}, "exp")}, "log");
  ValueId a3 = n("Reciprocal", {n("Add", {a2, b.scalar("eps", 0.5f)}, "add")}, "rec");
  ValueId a4 = n("Erf", {n("Sigmoid", {n("Neg", {a3}, "neg")}, "sig")}, "erf");
  ValueId a5 = n("HardSwish", {n("HardSigmoid", {a4}, "hsig", hs)}, "hsw");
  ValueId a6 = n("LeakyRelu", {n("Relu", {n("Sub", {a5, z}, "sub")}, "relu")}, "lrelu", one("alpha", float_attr(0.07f)));
  // min(x, z) + 4 lies in [1, 5]: a well-conditioned divisor, so bf16 rounding stays bounded
  ValueId a7 = n("Div", {n("Max", {a6, z}, "max"), n("Add", {n("Min", {x, z}, "min"), b.scalar("four", 4.0f)}, "den")}, "div");
  b.output(n("Tanh", {a7}, "float_out"));
  ValueId l1 = n("Less", {x, z}, "lt");
  ValueId l2 = n("GreaterOrEqual", {x, z}, "ge");
  ValueId l3 = n("Or", {n("Not", {l1}, "not"), n("And", {l2, c}, "and")}, "or");
  ValueId l4 = n("Cast", {i}, "icast", one("to", int_attr(int64_t(DType::kFloat32))));
  ValueId l5 = n("Where", {l3, l4, x}, "where");
  ValueId l6 = n("Equal", {n("Cast", {l5}, "tobool", one("to", int_attr(int64_t(DType::kBool)))), c}, "eq");
  ValueId l7 = n("Greater", {n("Cast", {l6}, "tofloat", one("to", int_attr(int64_t(DType::kFloat32)))), x}, "gt");
  b.output(n("LessOrEqual", {n("Cast", {l7}, "tofloat2", one("to", int_attr(int64_t(DType::kFloat32)))), z}, "bool_out"));
  ASSERT_GE(fused_nodes(b.m), 4);
  check_all_precisions(b.m, {{"x", random_of(DType::kFloat32, {5, 37}, 5, -3, 3)},
                             {"z", random_of(DType::kFloat32, {37}, 6)},
                             {"c", random_of(DType::kBool, {5, 1}, 7)},
                             {"i", random_of(DType::kInt32, {5, 37}, 8, -3, 3)}},
                       "every op");
}

TEST(CudaFusedElementwise, NineDimBroadcastFallsBackToCpu) {
  INGOT_REQUIRE_GPU();
  // A FusedElementwise node written directly: nine dims that no merging reduces; the CUDA
  // kernel refuses rank > 8 and the node runs on the CPU.
  const Shape a{2, 1, 2, 1, 2, 1, 2, 1, 3}, bshape{1, 2, 1, 2, 1, 2, 1, 2, 1};
  Model m = single_node_model("FusedElementwise", {random_of(DType::kFloat32, a, 1), random_of(DType::kFloat32, bshape, 2)},
                              1, {}, 17, "ingot");
  EwProgram p;
  p.num_inputs = 2;
  EwStep mul;
  mul.op = EwOp::kMul;
  mul.in[0] = 0;
  mul.in[1] = 1;
  EwStep ex;
  ex.op = EwOp::kExp;
  ex.in[0] = 2;
  p.steps = {mul, ex};
  set_ew_program(p, m.graph.nodes[0].attrs);
  expect_cuda_matches_cpu(m, {{"in0", random_of(DType::kFloat32, a, 1)}, {"in1", random_of(DType::kFloat32, bshape, 2)}},
                          1e-6, 1e-5, "9-D fallback");
}

}  // namespace
}  // namespace ingot::testing
