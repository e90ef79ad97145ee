// fuse_linear and the ingot.FusedMatMul kernel: the rewrite fires on MatMul/Gemm linears (with
// bias and activation), stays away when a condition fails, and optimized outputs match the
// unoptimized engine; the kernel matches a naive reference on awkward shapes in f32 and bf16;
// the transformer fixtures get their linears fused and still match PyTorch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../ops/op_test_util.h"
#include "backends/cpu/gemm_few_rows.h"
#include "io/npy.h"
#include "runtime/kernel.h"

namespace ingot {
namespace {

using namespace ingot::testing;

// A tiny graph builder: values by name, constants as initializers.
struct Builder {
  Model m;
  explicit Builder(int opset = 20) {
    m.path = "test:fuse_linear";
    m.ir_version = 8;
    m.opsets[""] = opset;
  }
  // `shape`: the declared shape (shape inference needs one for rank questions); empty: none.
  ValueId input(const std::string& name, const Shape& shape = {}) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = DType::kFloat32;
    if (!shape.empty()) {
      SymShape s;
      for (int64_t d : shape) s.push_back(Dim{d, {}});
      m.graph.value(id).shape = s;
    }
    m.graph.inputs.push_back(id);
    return id;
  }
  ValueId constant(const std::string& name, Tensor t) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = t.dtype();
    m.graph.initializers[id] = std::move(t);
    return id;
  }
  ValueId node(const std::string& op, std::vector<ValueId> ins, const std::string& out, Attributes attrs = {},
               const std::string& domain = "") {
    Node n;
    n.op_type = op;
    n.domain = domain;
    n.name = out + "_node";
    n.inputs = std::move(ins);
    ValueId o = m.graph.intern(out);
    n.outputs = {o};
    n.attrs = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
    return o;
  }
  void output(ValueId v) { m.graph.outputs.push_back(v); }
};

Attributes attrs(std::initializer_list<std::pair<std::string, Attribute>> l) {
  Attributes a;
  for (auto& [k, v] : l) a.set(k, v);
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

// Builds optimized and unoptimized engines, runs both on `feeds`, expects equal outputs
// (same names, within tol). Returns the optimized engine's model for structural checks.
Model check_equivalent(const Model& model, const std::map<std::string, Tensor>& feeds, double tol = 1e-5) {
  EngineOptions plain;
  plain.optimize = false;
  auto ref = Engine::from_model(model, plain);
  auto opt = Engine::from_model(model);
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
      EXPECT_LE(max_abs_diff((*a)[i].tensor, (*b)[i].tensor), tol) << (*a)[i].name;
    }
  }
  return (*opt)->model();
}

// x[2,5,K] x W[K,N] + b (+ act): the TorchScript linear.
Model linear_model(int64_t K, int64_t N, const std::string& act, bool bias_first = false, int opset = 20) {
  Builder b(opset);
  ValueId x = b.input("x");
  ValueId w = b.constant("W", random_tensor({K, N}, 1));
  ValueId bias = b.constant("b", random_tensor({N}, 2));
  ValueId y = b.node("MatMul", {x, w}, "mm");
  y = b.node("Add", bias_first ? std::vector<ValueId>{bias, y} : std::vector<ValueId>{y, bias}, "add");
  if (act == "Relu") y = b.node("Relu", {y}, "act");
  if (act == "Gelu" || act == "GeluTanh")
    y = b.node("Gelu", {y}, "act", attrs({{"approximate", string_attr(act == "Gelu" ? "none" : "tanh")}}));
  b.output(y);
  return b.m;
}

TEST(FuseLinear, MatMulAddActivationBecomesOneNode) {
  for (std::string act : {"", "Relu", "Gelu", "GeluTanh"}) {
    for (bool bias_first : {false, true}) {
      Model m = linear_model(24, 20, act, bias_first);
      Model opt = check_equivalent(m, {{"x", random_tensor({2, 5, 24}, 3)}});
      ASSERT_EQ(opt.graph.nodes.size(), 1u) << act;
      const Node& f = opt.graph.nodes[0];
      EXPECT_EQ(f.op_type, "FusedMatMul");
      EXPECT_EQ(f.domain, "ingot");
      EXPECT_EQ(f.inputs.size(), 3u);
      EXPECT_EQ(f.attrs.get_string("activation", "?"), act);
      EXPECT_EQ(f.attrs.get_string("precision", "?"), "fp32");
      // The graph output keeps its name.
      EXPECT_EQ(opt.graph.value(opt.graph.outputs[0]).name, act.empty() ? "add" : "act");
    }
  }
}

TEST(FuseLinear, FusesIngotGeluWhenItsKernelExists) {
  if (!KernelRegistry::instance().find("cpu", "ingot", "Gelu")) GTEST_SKIP() << "no ingot.Gelu kernel in this build";
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId x = b.input("x");
  ValueId y = b.node("MatMul", {x, b.constant("W", random_tensor({8, 12}, 1))}, "mm");
  y = b.node("Gelu", {y}, "g", attrs({{"approximate", string_attr("tanh")}}), "ingot");
  b.output(y);
  Model opt = check_equivalent(b.m, {{"x", random_tensor({3, 8}, 3)}});
  ASSERT_EQ(opt.graph.nodes.size(), 1u);
  EXPECT_EQ(opt.graph.nodes[0].attrs.get_string("activation", "?"), "GeluTanh");
}

TEST(FuseLinear, PlainMatMulAndBiasShapes) {
  {  // no bias: a 2-input FusedMatMul; A of rank 1 works too
    Builder b;
    ValueId x = b.input("x");
    b.output(b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({7}, 3)}});
    ASSERT_EQ(count_ops(opt, "FusedMatMul"), 1);
    EXPECT_EQ(find_op(opt, "FusedMatMul")->inputs.size(), 2u);
  }
  {  // a [1, 1, N] bias on a rank-3 output is still a bias
    Builder b;
    ValueId x = b.input("x", {2, 3, 7});
    ValueId y = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    b.output(b.node("Add", {y, b.constant("b", random_tensor({1, 1, 9}, 2))}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({2, 3, 7}, 3)}});
    EXPECT_EQ(count_ops(opt, "Add"), 0);
    EXPECT_EQ(count_ops(opt, "FusedMatMul"), 1);
  }
  {  // a per-row [S, N] "bias" is no bias: the MatMul fuses alone, the Add stays
    Builder b;
    ValueId x = b.input("x");
    ValueId y = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    b.output(b.node("Add", {y, b.constant("b", random_tensor({3, 9}, 2))}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({2, 3, 7}, 3)}});
    EXPECT_EQ(count_ops(opt, "Add"), 1);
    EXPECT_EQ(find_op(opt, "FusedMatMul")->inputs.size(), 2u);
  }
  {  // a bias that would broadcast the output to a higher rank stays an Add
    Builder b;
    ValueId x = b.input("x", {4, 7});
    ValueId y = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    b.output(b.node("Add", {y, b.constant("b", random_tensor({1, 1, 9}, 2))}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({4, 7}, 3)}});
    EXPECT_EQ(count_ops(opt, "Add"), 1);
  }
}

TEST(FuseLinear, DoesNotFireWhenAConditionFails) {
  {  // weights are a graph input, not a constant
    Builder b;
    ValueId x = b.input("x"), w = b.input("w");
    b.output(b.node("Add", {b.node("MatMul", {x, w}, "mm"), b.constant("b", random_tensor({9}, 2))}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({3, 7}, 3)}, {"w", random_tensor({7, 9}, 4)}});
    EXPECT_EQ(count_ops(opt, "FusedMatMul"), 0);
    EXPECT_EQ(count_ops(opt, "MatMul"), 1);
  }
  {  // bias is not constant: the MatMul fuses, the Add stays
    Builder b;
    ValueId x = b.input("x"), bias = b.input("bias");
    ValueId y = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    b.output(b.node("Add", {y, bias}, "y"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({3, 7}, 3)}, {"bias", random_tensor({9}, 4)}});
    EXPECT_EQ(count_ops(opt, "Add"), 1);
  }
  {  // the MatMul output has a second reader: the bias and activation stay separate
    Builder b;
    ValueId x = b.input("x");
    ValueId mm = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    ValueId y = b.node("Add", {mm, b.constant("b", random_tensor({9}, 2))}, "add");
    b.output(b.node("Relu", {y}, "y"));
    b.output(b.node("Neg", {mm}, "z"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({3, 7}, 3)}});
    EXPECT_EQ(count_ops(opt, "Add"), 1);
    EXPECT_EQ(count_ops(opt, "Relu"), 1);
    EXPECT_EQ(find_op(opt, "FusedMatMul")->inputs.size(), 2u);
  }
  {  // the Add output is a graph output: the activation stays
    Builder b;
    ValueId x = b.input("x");
    ValueId mm = b.node("MatMul", {x, b.constant("W", random_tensor({7, 9}, 1))}, "mm");
    ValueId y = b.node("Add", {mm, b.constant("b", random_tensor({9}, 2))}, "add");
    b.output(y);
    b.output(b.node("Relu", {y}, "r"));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({3, 7}, 3)}});
    EXPECT_EQ(count_ops(opt, "Relu"), 1);
    EXPECT_EQ(find_op(opt, "FusedMatMul")->attrs.get_string("activation", "?"), "");
  }
  {  // Gemm with alpha != 1, transA, or a full [M, N] C is left alone
    for (int variant = 0; variant < 3; ++variant) {
      Builder b;
      ValueId x = b.input("x");
      Attributes at;
      if (variant == 0) at.set("alpha", float_attr(0.5f));
      if (variant == 1) at.set("transA", int_attr(1));
      Tensor c = variant == 2 ? random_tensor({3, 9}, 2) : random_tensor({9}, 2);
      b.output(b.node("Gemm", {x, b.constant("W", random_tensor({7, 9}, 1)), b.constant("c", c)}, "y", at));
      Model opt = check_equivalent(b.m, {{"x", random_tensor(variant == 1 ? Shape{7, 3} : Shape{3, 7}, 3)}});
      EXPECT_EQ(count_ops(opt, "FusedMatMul"), 0) << variant;
    }
  }
}

TEST(FuseLinear, GemmWithTransBAndActivationBehindReshape) {
  for (int trans_b : {0, 1}) {
    // GPT-2's Conv1D: x[B*S, K] -> Gemm(W, c) -> Reshape [B, S, N] -> Gelu.
    Builder b;
    ValueId x = b.input("x");
    ValueId w = b.constant("W", random_tensor(trans_b ? Shape{12, 8} : Shape{8, 12}, 1));
    ValueId y = b.node("Gemm", {x, w, b.constant("c", random_tensor({12}, 2))}, "gemm",
                       attrs({{"transB", int_attr(trans_b)}}));
    Tensor shape(DType::kInt64, {3});
    shape.data<int64_t>()[0] = 2, shape.data<int64_t>()[1] = 3, shape.data<int64_t>()[2] = 12;
    y = b.node("Reshape", {y, b.constant("shape", shape)}, "r");
    b.output(b.node("Gelu", {y}, "y", attrs({{"approximate", string_attr("tanh")}})));
    Model opt = check_equivalent(b.m, {{"x", random_tensor({6, 8}, 3)}});
    EXPECT_EQ(count_ops(opt, "Gelu"), 0);
    EXPECT_EQ(count_ops(opt, "Reshape"), 1);
    ASSERT_NE(find_op(opt, "FusedMatMul"), nullptr);
    EXPECT_EQ(find_op(opt, "FusedMatMul")->attrs.get_string("activation", "?"), "GeluTanh");
    EXPECT_EQ(opt.graph.value(opt.graph.outputs[0]).name, "y");
  }
}

// Naive reference: act(A x W + b) in double.
Tensor reference(const Tensor& A, const Tensor& W, const Tensor* b, const std::string& act) {
  int64_t K = W.dim(0), N = W.dim(1);
  Shape s(A.shape().begin(), A.shape().end() - 1);
  int64_t M = shape_numel(s);
  s.push_back(N);
  Tensor Y(DType::kFloat32, s);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = b ? b->data<float>()[j] : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(A.data<float>()[i * K + k]) * W.data<float>()[k * N + j];
      if (act == "Relu") acc = std::max(acc, 0.0);
      if (act == "Gelu") acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
      if (act == "GeluTanh") acc = 0.5 * acc * (1 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
      Y.data<float>()[i * N + j] = float(acc);
    }
  return Y;
}

// Runs a one-node FusedMatMul model; W (and bias) constant unless `w_input`.
Tensor run_fused(const Tensor& A, const Tensor& W, const Tensor* bias, const std::string& act,
                 const std::string& precision, bool w_input) {
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId a = b.input("a");
  ValueId w = w_input ? b.input("w") : b.constant("w", W);
  std::vector<ValueId> ins{a, w};
  if (bias) ins.push_back(b.constant("bias", *bias));
  b.output(b.node("FusedMatMul", ins, "y",
                  attrs({{"activation", string_attr(act)}, {"precision", string_attr(precision)}}), "ingot"));
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(b.m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  std::map<std::string, Tensor> feeds{{"a", A}};
  if (w_input) feeds["w"] = W;
  auto out = (*e)->create_context()->run(feeds);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  return out ? (*out)[0].tensor : Tensor();
}

TEST(FuseLinear, KernelMatchesReferenceOnAwkwardShapes) {
  // bf16 on oneDNN's bf16 matmul whatever this CPU is (where bf16 arithmetic is no faster, Intel
  // CPUs without AMX, it would compute in float32: FuseLinear.Bf16WithoutBf16ProductsIsFloat32).
  setenv("INGOT_CPU_BF16_PRODUCTS", "on", 1);
  struct Case { Shape a; int64_t N; };
  std::vector<Case> cases = {{{2, 3, 5, 16}, 17}, {{1, 33}, 1}, {{4, 1}, 70}, {{129, 64}, 48}, {{7}, 3},
                             {{2, 64, 96}, 200}};
  uint32_t seed = 10;
  for (const auto& c : cases)
    for (std::string act : {"", "Relu", "Gelu", "GeluTanh"})
      for (bool with_bias : {false, true})
        for (bool w_input : {false, true})
          for (std::string prec : {"fp32", "bf16"}) {
            int64_t K = c.a.back();
            Tensor A = random_tensor(c.a, seed++), W = random_tensor({K, c.N}, seed++);
            Tensor bias = random_tensor({c.N}, seed++);
            Tensor want = reference(A, W, with_bias ? &bias : nullptr, act);
            Tensor got = run_fused(A, W, with_bias ? &bias : nullptr, act, prec, w_input);
            // bf16 keeps 8 bits of mantissa: errors grow like sqrt(K) * 2^-8.
            double tol = prec == "fp32" ? 1e-4 : 0.02 * std::sqrt(double(K));
            EXPECT_LE(max_abs_diff(got, want), tol) << shape_str(c.a) << " N=" << c.N << " act=" << act
                                                    << " bias=" << with_bias << " w_input=" << w_input << " " << prec;
          }
  unsetenv("INGOT_CPU_BF16_PRODUCTS");
}

// Where bf16 products do not pay (backends/cpu/bf16_products.h), precision bf16
// computes in float32: many rows, and weights given at run time, give precision fp32's numbers
// exactly; few rows of constant weights read a bf16 copy (gemm_few_rows_w16), which is fp32 on
// the weights rounded to bf16, exactly.
TEST(FuseLinear, Bf16WithoutBf16ProductsIsFloat32) {
  setenv("INGOT_CPU_BF16_PRODUCTS", "off", 1);
  uint32_t seed = 500;
  for (Shape a : {Shape{3, 96}, Shape{200, 96}})
    for (bool w_input : {false, true}) {
      Tensor A = random_tensor(a, seed++), W = random_tensor({96, 130}, seed++), bias = random_tensor({130}, seed++);
      Tensor Wr = bf16_rounded(W);
      const bool few_rows_on_bf16 = !w_input && a[0] <= cpu::kFewRowsMax && cpu::few_rows_supported();
      Tensor want = run_fused(A, few_rows_on_bf16 ? Wr : W, &bias, "Gelu", "fp32", w_input);
      Tensor got = run_fused(A, W, &bias, "Gelu", "bf16", w_input);
      EXPECT_EQ(max_abs_diff(want, got), 0.0) << shape_str(a) << " w_input=" << w_input;
    }
  unsetenv("INGOT_CPU_BF16_PRODUCTS");
}

TEST(FuseLinear, KernelRepeatedCallsAndEmptyK) {
  Tensor W = random_tensor({32, 40}, 1), bias = random_tensor({40}, 2);
  // Several M on one engine: primitives are cached per M, packed weights shared.
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId a = b.input("a");
  b.output(b.node("FusedMatMul", {a, b.constant("w", W), b.constant("bias", bias)}, "y",
                  attrs({{"activation", string_attr("Gelu")}}), "ingot"));
  auto e = Engine::from_model(b.m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  for (int64_t M : {1, 128, 3, 1000, 128, 0}) {
    Tensor A = random_tensor({M, 32}, uint32_t(M) + 5);
    auto out = (*e)->create_context()->run({{"a", A}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    EXPECT_LE(max_abs_diff((*out)[0].tensor, reference(A, W, &bias, "Gelu")), 1e-4) << M;
  }
  // K = 0: the output is act(bias).
  Tensor A0(DType::kFloat32, {3, 0}), W0(DType::kFloat32, {0, 5});
  Tensor b5 = random_tensor({5}, 9);
  EXPECT_LE(max_abs_diff(run_fused(A0, W0, &b5, "Relu", "fp32", false), reference(A0, W0, &b5, "Relu")), 1e-6);
}

TEST(FuseLinear, KernelRejectsBadInputs) {
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId a = b.input("a");
  b.output(b.node("FusedMatMul", {a, b.constant("w", random_tensor({4, 6}, 1))}, "y",
                  attrs({{"activation", string_attr("Swish")}}), "ingot"));
  EXPECT_FALSE(Engine::from_model(b.m).has_value());
  b.m.graph.nodes[0].attrs.set("activation", string_attr(""));
  auto e = Engine::from_model(b.m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  EXPECT_FALSE((*e)->create_context()->run({{"a", random_tensor({2, 5}, 3)}}).has_value());  // K mismatch
}

// Every transformer fixture: linears fused (at least the two FFN linears of each of the two
// layers), outputs still within 1e-4 of PyTorch.
TEST(FuseLinear, TransformerFixtures) {
  namespace fs = std::filesystem;
  for (std::string model : {"bert", "distilbert", "roberta", "gpt2"})
    for (std::string exporter : {"torchscript", "dynamo"}) {
      fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / model;
      fs::path file = dir / ("model." + exporter + ".onnx");
      if (!fs::exists(file)) continue;
      auto e = Engine::from_onnx(file.string());
      ASSERT_TRUE(e.has_value()) << e.status().message();
      int fused = 0;
      std::map<std::string, int> acts;
      for (const Node& n : (*e)->model().graph.nodes)
        if (n.op_type == "FusedMatMul") ++fused, ++acts[n.attrs.get_string("activation", "")];
      std::string act_str;
      for (const auto& [a, c] : acts) act_str += " " + (a.empty() ? std::string("none") : a) + ":" + std::to_string(c);
      std::printf("[ fixture  ] %s/%s: %d FusedMatMul (activation%s)\n", model.c_str(), exporter.c_str(), fused,
                  act_str.c_str());
      EXPECT_GE(fused, 4) << model << "/" << exporter;
      auto inputs = read_npz((dir / "inputs.npz").string());
      auto want = read_npz((dir / "reference.npz").string());
      ASSERT_TRUE(inputs && want);
      EngineOptions plain;
      plain.optimize = false;
      auto ref = Engine::from_onnx(file.string(), plain);
      ASSERT_TRUE(ref.has_value());
      if (!(*ref)->create_context()->run(*inputs)) {
        std::printf("[ fixture  ] %s/%s: the unoptimized engine cannot run it either; numbers not compared\n",
                    model.c_str(), exporter.c_str());
        continue;
      }
      auto outs = (*e)->create_context()->run(*inputs);
      ASSERT_TRUE(outs.has_value()) << outs.status().message();
      for (const auto& o : *outs) {
        auto it = want->find(o.name);
        ASSERT_NE(it, want->end()) << o.name;
        EXPECT_LE(max_abs_diff(o.tensor, it->second), 1e-4) << model << "/" << exporter << " " << o.name;
      }
    }
}

}  // namespace
}  // namespace ingot
