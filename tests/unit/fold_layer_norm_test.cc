// fold_layer_norm_into_product: for CUDA engines a LayerNormalization of an ingot.FusedMatMul's or
// ingot.Attention's output goes into the product (FusedMatMul inputs 4-5, Attention inputs 7-8,
// attribute norm_epsilon) and the node is gone; CPU engines keep it. After
// fold_residual_into_product it takes the LayerNorm that pass leaves (FusedMatMul and Attention
// with a residual), and a plain product's LayerNorm (with or without bias, float32 or float16,
// axis -1 given, implied or given as rank - 1, an unread Mean output) just the same. It leaves
// the node when the product's output has a second reader or is a graph output, the LayerNorm
// normalises more than the last axis or its Mean is read, gamma is not [H] or not in the
// product's dtype, the product has an activation, an Attention has query_rows or no W_out, a
// classifier head reads the LayerNorm, and when it is disabled by name (options or
// INGOT_DISABLE_PASSES). The rewritten graphs compute the same outputs on the CPU kernels, which
// match a separate LayerNormalization in float32 and float16 and reject malformed LayerNorm
// inputs with one line naming them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "fold_blocks.h"

namespace ingot {
namespace {

using namespace ingot::testing;
using namespace ingot::testing::fold;

const std::string kPass = "fold_layer_norm_into_product";

// float32: the same numbers as the separate LayerNormalization (same arithmetic). float16: the
// folded sum is not rounded to float16 before the LayerNorm, the separate one is (about 2^-11
// relative of values normalised to order 1, times gamma up to 1.5).
double norm_tolerance(DType t) { return t == DType::kFloat32 ? 1e-5 : 4e-3; }

// A model after fold_layer_norm_into_product alone, its rewrites (-1: it failed) and its notes.
struct AfterPass {
  Model m;
  int rewrites = -1;
  std::vector<std::string> notes;
};

AfterPass after_pass(Model m, const std::string& device = "cuda") {
  PassContext ctx({}, device);
  auto n = registered_passes().at(kPass)()->run(m, ctx);
  EXPECT_TRUE(n.has_value()) << n.status().message();
  return {std::move(m), n ? *n : -1, ctx.take_notes()};
}

// S = FusedMatMul(A [3, 4, K], W [K, N] (, bias)); Y = LayerNormalization(S, gamma (, beta)), and
// what a case changes about it.
constexpr int64_t K = 16, N = 24;
enum class Mean { kAbsent, kUnread, kRead };
struct Plain {
  DType t = DType::kFloat32;
  bool bias = true, beta = true;
  std::optional<int64_t> axis;    // absent: the default, -1
  std::optional<float> epsilon;   // absent: the default, 1e-5
  Shape gamma_shape{N};
  std::optional<DType> gamma_dtype;  // absent: t
  std::string activation;
  Mean mean = Mean::kAbsent;      // LayerNormalization's output 1
  bool s_output = false, second_reader = false;
};

Model plain_product(const Plain& c) {
  GraphBuilder b("test:fold_layer_norm");
  ValueId a = b.input("A", c.t, {3, 4, K});
  std::vector<ValueId> ins{a, b.constant("W", in_dtype(c.t, random_tensor({K, N}, 1)))};
  if (c.bias) ins.push_back(b.constant("bias", in_dtype(c.t, random_tensor({N}, 2))));
  Attributes mm;
  if (!c.activation.empty()) mm.set("activation", string_attr(c.activation));
  const ValueId s = b.node("FusedMatMul", ins, mm, "ingot");
  Attributes ln;
  if (c.axis) ln.set("axis", int_attr(*c.axis));
  if (c.epsilon) ln.set("epsilon", float_attr(*c.epsilon));
  std::vector<ValueId> lins{
      s, b.constant("gamma", in_dtype(c.gamma_dtype.value_or(c.t), random_tensor(c.gamma_shape, 3, 0.5f, 1.5f)))};
  if (c.beta) lins.push_back(b.constant("beta", in_dtype(c.t, random_tensor({N}, 4))));
  b.output(b.node("LayerNormalization", lins, ln));
  if (c.mean != Mean::kAbsent) {
    const ValueId mean = b.m.graph.intern("mean");
    b.m.graph.nodes.back().outputs.push_back(mean);
    if (c.mean == Mean::kRead) b.output(b.node("Relu", {mean}));
  }
  if (c.s_output) b.output(s);
  if (c.second_reader) b.output(b.node("Relu", {s}));
  return b.m;
}

// The pipeline folds the LayerNorm fold_residual_into_product leaves after a FusedMatMul with a
// residual: the product takes gamma and beta (inputs 4 and 5, beta optional) and the
// LayerNorm's epsilon, writes the LayerNorm's output under its name, and no LayerNormalization
// is left.
TEST(FoldLayerNormIntoProduct, FoldsAfterFoldResidualIntoAFusedMatMulWithItsResidual) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  for (bool beta : {true, false}) {
    const std::string what = beta ? "with beta" : "without beta";
    const Model original = ffn_block(true, false, false, {B, S, E}, Norm{{E}, beta, 1e-3f});
    auto [cuda, rewrites] = optimized_for(original, "cuda", {}, kPass);
    EXPECT_EQ(rewrites, 1) << what;
    EXPECT_EQ(count(cuda).layer_norm + count(cuda).skip_ln, 0) << what;
    const Node* p = norm_product(cuda);
    ASSERT_NE(p, nullptr) << what;
    const Graph& g = cuda.graph;
    EXPECT_EQ(p->op_type, "FusedMatMul") << what;
    ASSERT_EQ(p->inputs.size(), beta ? 6u : 5u) << what;
    EXPECT_EQ(g.value(p->inputs[3]).name, "X") << what;
    EXPECT_EQ(g.value(p->inputs[4]).name, "gamma") << what;
    if (beta) EXPECT_EQ(g.value(p->inputs[5]).name, "beta") << what;
    EXPECT_FLOAT_EQ(p->attrs.get_float("norm_epsilon", 0.f), 1e-3f) << what;
    ASSERT_EQ(p->outputs.size(), 1u) << what;
    ASSERT_EQ(g.outputs.size(), 1u) << what;
    EXPECT_EQ(p->outputs[0], g.outputs[0]) << what;
    EXPECT_EQ(g.value(g.outputs[0]).name, original.graph.value(original.graph.outputs[0]).name) << what;
    EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 1e-5) << what;
  }
}

// ... and the one after an Attention with its residual: inputs 7 and 8.
TEST(FoldLayerNormIntoProduct, FoldsAfterFoldResidualIntoAnAttentionWithItsResidual) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 7)}};
  const Model original = attention_block({});
  auto [cuda, rewrites] = optimized_for(original, "cuda", {}, kPass);
  EXPECT_EQ(rewrites, 1);
  EXPECT_EQ(count(cuda).layer_norm + count(cuda).skip_ln, 0);
  const Node* p = norm_product(cuda);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op_type, "Attention");
  ASSERT_EQ(p->inputs.size(), 9u);
  EXPECT_EQ(cuda.graph.value(p->inputs[6]).name, "X");
  EXPECT_EQ(cuda.graph.value(p->inputs[7]).name, "gamma");
  EXPECT_EQ(cuda.graph.value(p->inputs[8]).name, "beta");
  EXPECT_FLOAT_EQ(p->attrs.get_float("norm_epsilon", 0.f), 1e-5f);
  EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 1e-5);
}

// A product without residual followed by a LayerNormalization folds too (the pass alone): with
// or without bias and beta, in float32 and float16, axis and epsilon defaulted or given (axis as
// -1 or as rank - 1 = 2), with a Mean output nothing reads; the pass notes what it folded.
TEST(FoldLayerNormIntoProduct, FoldsAPlainFusedMatMul) {
  std::vector<std::pair<std::string, Plain>> cases;
  for (DType t : {DType::kFloat32, DType::kFloat16}) {
    const std::string dt = dtype_name(t);
    cases.push_back({dt + " defaults", Plain{t}});
    cases.push_back({dt + " no bias, no beta, axis -1", Plain{t, false, false, -1, 1e-3f}});
    cases.push_back({dt + " axis 2", Plain{t, true, true, 2, 1e-4f}});
    Plain unread{t};
    unread.mean = Mean::kUnread;
    cases.push_back({dt + " unread Mean", unread});
  }
  for (const auto& [what, c] : cases) {
    const Model original = plain_product(c);
    auto r = after_pass(original);
    EXPECT_EQ(r.rewrites, 1) << what;
    EXPECT_EQ(count(r.m).layer_norm, 0) << what;
    ASSERT_EQ(r.m.graph.nodes.size(), 1u) << what;
    const Node& p = r.m.graph.nodes[0];
    const Graph& g = r.m.graph;
    ASSERT_EQ(p.inputs.size(), c.beta ? 6u : 5u) << what;
    EXPECT_EQ(p.inputs[2] != kNoValue, c.bias) << what;
    EXPECT_EQ(p.inputs[3], kNoValue) << what;
    EXPECT_EQ(g.value(p.inputs[4]).name, "gamma") << what;
    if (c.beta) EXPECT_EQ(g.value(p.inputs[5]).name, "beta") << what;
    EXPECT_FLOAT_EQ(p.attrs.get_float("norm_epsilon", 0.f), c.epsilon.value_or(1e-5f)) << what;
    ASSERT_EQ(p.outputs.size(), 1u) << what;
    EXPECT_EQ(p.outputs[0], g.outputs[0]) << what;
    ASSERT_EQ(r.notes.size(), 1u) << what;
    EXPECT_NE(r.notes[0].find("1 LayerNorm(s) folded"), std::string::npos) << r.notes[0];
    const std::map<std::string, Tensor> feeds{{"A", in_dtype(c.t, random_tensor({3, 4, K}, 5))}};
    EXPECT_LE(max_output_diff(run_as_is(r.m, feeds), run_as_is(original, feeds)), norm_tolerance(c.t)) << what;
  }
  // CPU engines keep the node.
  auto cpu = after_pass(plain_product(Plain{}), "cpu");
  EXPECT_EQ(cpu.rewrites, 0);
  EXPECT_EQ(count(cpu.m).layer_norm, 1);
}

// What the pass leaves alone (the pass alone): the product's output S read by another node too
// or a graph output (the product could not write it any more), a LayerNorm over more than the
// last axis or with its Mean read, gamma [1] (broadcast) or of another dtype than S, a product
// with an activation.
TEST(FoldLayerNormIntoProduct, LeavesTheNodeWhereTheProductCannotTakeIt) {
  std::vector<std::pair<std::string, Plain>> cases;
  Plain c;
  c.second_reader = true;
  cases.push_back({"S has a second reader", c});
  c = Plain{};
  c.s_output = true;
  cases.push_back({"S is a graph output", c});
  c = Plain{};
  c.axis = 1;
  cases.push_back({"axis 1 of 3", c});
  c = Plain{};
  c.mean = Mean::kRead;
  cases.push_back({"Mean read", c});
  c = Plain{};
  c.gamma_shape = {1};
  cases.push_back({"gamma [1]", c});
  c = Plain{};
  c.gamma_dtype = DType::kFloat16;
  cases.push_back({"gamma float16, S float32", c});
  c = Plain{};
  c.activation = "Relu";
  cases.push_back({"activation Relu", c});
  for (const auto& [what, plain] : cases) {
    auto r = after_pass(plain_product(plain));
    EXPECT_EQ(r.rewrites, 0) << what;
    EXPECT_EQ(count(r.m).layer_norm, 1) << what;
    EXPECT_EQ(count(r.m).norm_products, 0) << what;
    EXPECT_TRUE(r.notes.empty()) << what;
  }
}

// Y = LayerNormalization(Attention(X, Wqkv, bqkv, -, W_out, b_out)) without residual: folds
// (inputs 7 and 8); not with query_rows (a classifier's last layer) or without W_out (the
// output is the heads' concatenation).
TEST(FoldLayerNormIntoProduct, AttentionFoldsUnlessItHasQueryRowsOrNoOutputProjection) {
  auto model = [](bool query_rows, bool w_out) {
    GraphBuilder b("test:fold_layer_norm_attention");
    ValueId x = b.input("X", DType::kFloat32, {B, S, E});
    Attributes a;
    a.set("num_heads", int_attr(kHeads));
    if (query_rows) a.set("query_rows", ints_attr({0}));
    ValueId y = b.node("Attention",
                       {x, b.constant("Wqkv", random_tensor({E, 3 * E}, 1)), b.constant("bqkv", random_tensor({3 * E}, 2)),
                        kNoValue, w_out ? b.constant("Wout", random_tensor({E, E}, 3)) : kNoValue,
                        w_out ? b.constant("bout", random_tensor({E}, 4)) : kNoValue},
                       a, "ingot");
    b.output(layer_norm(b, y, Norm{}));
    return b.m;
  };
  const Model whole = model(false, true);
  auto r = after_pass(whole);
  EXPECT_EQ(r.rewrites, 1);
  const Node* p = norm_product(r.m);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->inputs.size(), 9u);
  EXPECT_EQ(p->inputs[6], kNoValue);
  EXPECT_EQ(r.m.graph.value(p->inputs[7]).name, "gamma");
  EXPECT_EQ(r.m.graph.value(p->inputs[8]).name, "beta");
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, S, E}, 5)}};
  EXPECT_LE(max_output_diff(run_as_is(r.m, feeds), run_as_is(whole, feeds)), 1e-5);
  EXPECT_EQ(after_pass(model(true, true)).rewrites, 0) << "query_rows";
  EXPECT_EQ(after_pass(model(false, false)).rewrites, 0) << "no W_out";
}

// A LayerNorm a classifier head reads (a FusedMatMul, Tanh, and a FusedMatMul of at most 8
// logits) stays a node for fuse_classifier_head; with 16 "logits" (no such head) it folds.
TEST(FoldLayerNormIntoProduct, LeavesTheLayerNormOfAClassifierHead) {
  auto model = [](int64_t logits) {
    GraphBuilder b("test:fold_layer_norm_head");
    ValueId a = b.input("A", DType::kFloat32, {3, K});
    ValueId s = b.node("FusedMatMul", {a, b.constant("W", random_tensor({K, N}, 1))}, {}, "ingot");
    ValueId y = b.node("LayerNormalization", {s, b.constant("gamma", random_tensor({N}, 2)),
                                              b.constant("beta", random_tensor({N}, 3))});
    ValueId h = b.node("FusedMatMul", {y, b.constant("W1", random_tensor({N, N}, 4))}, {}, "ingot");
    b.output(b.node("FusedMatMul", {b.node("Tanh", {h}), b.constant("W2", random_tensor({N, logits}, 5))}, {},
                    "ingot"));
    return b.m;
  };
  auto head = after_pass(model(2));
  EXPECT_EQ(head.rewrites, 0);
  EXPECT_EQ(count(head.m).layer_norm, 1);
  EXPECT_EQ(after_pass(model(16)).rewrites, 1);
}

// Disabled by name, in the options or in INGOT_DISABLE_PASSES, the pass leaves the
// LayerNormalization fold_residual_into_product made.
TEST(FoldLayerNormIntoProduct, DisabledByNameLeavesTheLayerNormalization) {
  const Model m = ffn_block(true, false, false);
  auto expect_node = [](const Model& cuda, const std::string& what) {
    const Counts c = count(cuda);
    EXPECT_EQ(c.skip_ln, 0) << what;
    EXPECT_EQ(c.residual_products, 1) << what;
    EXPECT_EQ(c.layer_norm, 1) << what;
    EXPECT_EQ(c.norm_products, 0) << what;
  };
  auto [by_options, rewrites] = optimized_for(m, "cuda", {}, kPass, {kPass});
  EXPECT_EQ(rewrites, 0);
  expect_node(by_options, "options");

  const char* before = std::getenv("INGOT_DISABLE_PASSES");
  const std::string saved = before ? before : "";
  setenv("INGOT_DISABLE_PASSES", kPass.c_str(), 1);
  auto [by_env, env_rewrites] = optimized_for(m, "cuda", {}, kPass);
  if (before) setenv("INGOT_DISABLE_PASSES", saved.c_str(), 1);
  else unsetenv("INGOT_DISABLE_PASSES");
  EXPECT_EQ(env_rewrites, 0);
  expect_node(by_env, "INGOT_DISABLE_PASSES");

  auto [enabled, enabled_rewrites] = optimized_for(m, "cuda", {}, kPass);
  EXPECT_EQ(enabled_rewrites, 1);
  EXPECT_EQ(count(enabled).layer_norm, 0);
  EXPECT_EQ(count(enabled).norm_products, 1);
}

struct NormCase {
  DType t = DType::kFloat32;
  bool residual = false, beta = false;
  std::string what() const {
    return dtype_name(t) + (residual ? " residual" : " no residual") + (beta ? " beta" : " no beta");
  }
};

// `op` (domain ingot) on `base` inputs, its residual slot last (kNoValue: none), and the
// LayerNorm of its output of `width` columns: as the node's inputs gamma and beta with
// norm_epsilon (`folded`), or as a LayerNormalization node after it.
Model with_norm(GraphBuilder& b, const std::string& op, std::vector<ValueId> base, Attributes attrs, int64_t width,
                const NormCase& c, bool folded) {
  const float eps = 1e-3f;
  ValueId gamma = b.constant("gamma", in_dtype(c.t, random_tensor({width}, 21, 0.5f, 1.5f)));
  ValueId beta = c.beta ? b.constant("beta", in_dtype(c.t, random_tensor({width}, 22))) : kNoValue;
  if (folded) {
    base.push_back(gamma);
    if (c.beta) base.push_back(beta);
    attrs.set("norm_epsilon", float_attr(eps));
    b.output(b.node(op, base, attrs, "ingot"));
    return b.m;
  }
  while (base.back() == kNoValue) base.pop_back();
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ln.set("epsilon", float_attr(eps));
  std::vector<ValueId> ins{b.node(op, base, attrs, "ingot"), gamma};
  if (c.beta) ins.push_back(beta);
  b.output(b.node("LayerNormalization", ins, ln));
  return b.m;
}

std::vector<NormCase> norm_cases() {
  std::vector<NormCase> cases;
  for (DType t : {DType::kFloat32, DType::kFloat16})
    for (bool residual : {false, true})
      for (bool beta : {false, true}) cases.push_back({t, residual, beta});
  return cases;
}


// ingot.FusedMatMul with norm_gamma / norm_beta computes LayerNorm(A·W + bias (+ R)) as the
// product followed by a LayerNormalization node does.
TEST(FoldLayerNormIntoProduct, FusedMatMulLayerNormMatchesALayerNormalizationNode) {
  constexpr int64_t K = 16, N = 40;
  for (const NormCase& c : norm_cases()) {
    auto model = [&](bool folded) {
      GraphBuilder b("test:fused_matmul_norm");
      ValueId a = b.input("A", c.t, {3, 4, K});
      ValueId r = c.residual ? b.input("R", c.t, {3, 4, N}) : kNoValue;
      return with_norm(b, "FusedMatMul",
                       {a, b.constant("W", in_dtype(c.t, random_tensor({K, N}, 1))),
                        b.constant("bias", in_dtype(c.t, random_tensor({N}, 2))), r},
                       {}, N, c, folded);
    };
    std::map<std::string, Tensor> feeds{{"A", in_dtype(c.t, random_tensor({3, 4, K}, 3))}};
    if (c.residual) feeds["R"] = in_dtype(c.t, random_tensor({3, 4, N}, 4, -2.f, 2.f));
    auto folded = run_as_is(model(true), feeds), separate = run_as_is(model(false), feeds);
    ASSERT_EQ(folded.size(), 1u) << c.what();
    EXPECT_EQ(folded[0].tensor.dtype(), c.t) << c.what();
    EXPECT_LE(max_output_diff(folded, separate), norm_tolerance(c.t)) << c.what();
  }
}

// ingot.Attention with norm_gamma / norm_beta (inputs 7 and 8) normalises its output (after the
// projection and residual) as a LayerNormalization node after it does.
TEST(FoldLayerNormIntoProduct, AttentionLayerNormMatchesALayerNormalizationNode) {
  constexpr int64_t N = 8, M = 6;
  for (const NormCase& c : norm_cases()) {
    auto model = [&](bool folded) {
      GraphBuilder b("test:attention_norm");
      ValueId x = b.input("X", c.t, {B, S, E});
      ValueId r = c.residual ? b.input("R", c.t, {B, S, M}) : kNoValue;
      Attributes a;
      a.set("num_heads", int_attr(kHeads));
      a.set("scale", float_attr(0.3f));
      return with_norm(b, "Attention",
                       {x, b.constant("Wqkv", in_dtype(c.t, random_tensor({E, 3 * N}, 1))),
                        b.constant("bqkv", in_dtype(c.t, random_tensor({3 * N}, 2))), kNoValue,
                        b.constant("Wout", in_dtype(c.t, random_tensor({N, M}, 3))),
                        b.constant("bout", in_dtype(c.t, random_tensor({M}, 4))), r},
                       a, M, c, folded);
    };
    std::map<std::string, Tensor> feeds{{"X", in_dtype(c.t, random_tensor({B, S, E}, 5))}};
    if (c.residual) feeds["R"] = in_dtype(c.t, random_tensor({B, S, M}, 6, -2.f, 2.f));
    auto folded = run_as_is(model(true), feeds), separate = run_as_is(model(false), feeds);
    ASSERT_EQ(folded.size(), 1u) << c.what();
    EXPECT_EQ(folded[0].tensor.dtype(), c.t) << c.what();
    EXPECT_LE(max_output_diff(folded, separate), norm_tolerance(c.t)) << c.what();
  }
}

// m built as it is and run on feeds: "" when it ran, else the error line.
std::string run_message(const Model& m, const std::map<std::string, Tensor>& feeds) {
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(m, o);
  if (!e) return e.status().message();
  auto out = (*e)->create_context()->run(feeds);
  return out ? std::string() : out.status().message();
}

// Malformed LayerNorm inputs are one error naming the input or the attribute: gamma or beta of
// the wrong shape or dtype, beta without gamma, gamma with an activation or a float32 output
// (FusedMatMul), gamma without W_out (Attention).
TEST(FoldLayerNormIntoProduct, LayerNormInputErrorsNameTheInputOrAttribute) {
  constexpr int64_t K = 4, N = 6;
  auto fused = [&](Shape gamma_shape, DType gamma_dtype, Shape beta_shape, Attributes attrs, bool gamma = true) {
    GraphBuilder b("test:fused_matmul_norm_errors");
    ValueId a = b.input("A", DType::kFloat32, {3, K});
    std::vector<ValueId> ins{a, b.constant("W", random_tensor({K, N}, 1)), kNoValue, kNoValue,
                             gamma ? b.constant("gamma", in_dtype(gamma_dtype, random_tensor(gamma_shape, 2))) : kNoValue};
    if (!beta_shape.empty()) ins.push_back(b.constant("beta", random_tensor(beta_shape, 3)));
    b.output(b.node("FusedMatMul", ins, attrs, "ingot"));
    return run_message(b.m, {{"A", random_tensor({3, K}, 4)}});
  };
  auto expect_error = [](const std::string& got, const std::string& want) {
    EXPECT_NE(got.find(want), std::string::npos) << "got: '" << got << "', want: '" << want << "'";
  };
  EXPECT_EQ(fused({N}, DType::kFloat32, {N}, {}), "");
  expect_error(fused({N + 1}, DType::kFloat32, {}, {}), "input 4 (norm_gamma) has shape 7, expected [6]");
  expect_error(fused({N}, DType::kFloat16, {}, {}), "input 4 (norm_gamma) has dtype float16, A has float32");
  expect_error(fused({N}, DType::kFloat32, {1, N}, {}), "input 5 (norm_beta) has shape 1x6, expected [6]");
  expect_error(fused({N}, DType::kFloat32, {N}, {}, false), "input 5 (norm_beta) is given without input 4 (norm_gamma)");
  Attributes relu;
  relu.set("activation", string_attr("Relu"));
  expect_error(fused({N}, DType::kFloat32, {}, relu), "attribute 'activation' = 'Relu' with input 4 (norm_gamma)");
  Attributes wide;
  wide.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
  expect_error(fused({N}, DType::kFloat32, {}, wide), "attribute 'output_dtype' = 1 with input 4 (norm_gamma)");

  constexpr int64_t H = 2, AN = 8, M = 6;
  auto attention = [&](Shape gamma_shape, DType gamma_dtype, bool w_out) {
    GraphBuilder b("test:attention_norm_errors");
    ValueId x = b.input("X", DType::kFloat32, {B, S, E});
    Attributes a;
    a.set("num_heads", int_attr(H));
    b.output(b.node("Attention",
                    {x, b.constant("Wqkv", random_tensor({E, 3 * AN}, 1)), kNoValue, kNoValue,
                     w_out ? b.constant("Wout", random_tensor({AN, M}, 3)) : kNoValue, kNoValue, kNoValue,
                     b.constant("gamma", in_dtype(gamma_dtype, random_tensor(gamma_shape, 2)))},
                    a, "ingot"));
    return run_message(b.m, {{"X", random_tensor({B, S, E}, 5)}});
  };
  EXPECT_EQ(attention({M}, DType::kFloat32, true), "");
  expect_error(attention({M + 1}, DType::kFloat32, true), "input 7 (norm_gamma) has shape 7, expected [6]");
  expect_error(attention({M}, DType::kFloat16, true), "input 7 has dtype float16, X has float32");
  expect_error(attention({AN}, DType::kFloat32, false), "input 7 (norm_gamma) has shape 8 but W_out is absent");
}

}  // namespace
}  // namespace ingot
