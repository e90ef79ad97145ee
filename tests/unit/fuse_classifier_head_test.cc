// fuse_classifier_head: for CUDA engines LayerNormalization → FusedMatMul (ReLU, GELU, or none
// followed by a Tanh or Relu node) → FusedMatMul with at most 8 columns becomes one
// ingot.ClassifierHead; CPU engines keep the ops. The fused node computes what the ops did
// (its CPU kernel, the CUDA kernel's reference, against the unfused graph on the CPU), a shared
// intermediate or a wide second product stops it, the op's kernel rejects bad inputs with one
// line naming them, and the sequence classifiers of both exporters (DistilBERT's ReLU head,
// BERT's and RoBERTa's Tanh heads) end in one such node whose outputs still match PyTorch's.
// A feed-forward block (LayerNorm, product with activation, product with the residual) that
// makes the head's input joins the node, unless its normalized rows have another reader.
#include <gtest/gtest.h>

#include <cmath>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

constexpr int64_t B = 3, E = 16, F = 24;

int heads(const Model& m) {
  int n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == "ClassifierHead";
  return n;
}

std::pair<Model, int> optimized_for(Model m, const std::string& device, std::vector<ShapeBinding> bindings = {}) {
  return optimized_both_stages(std::move(m), device, "fuse_classifier_head", std::move(bindings));
}

struct HeadOptions {
  std::string fused_act;   // the first product's activation attribute
  std::string unary;       // "Tanh" / "Relu": a node after the first product, or ""
  int64_t logits = 2;
  bool hidden_output = false;  // H is a graph output too
  bool second_act = false;     // the second product has a ReLU
  // The feed-forward block before the head: "" none, else its first product's activation ("-"
  // for none).
  std::string ffn;
  bool ffn_shared = false;  // the block's normalized rows Hf are a graph output too
};

constexpr int64_t FF = 40;  // the block's hidden width

// Hf = LayerNormalization(X0), G = FusedMatMul(Hf, F1, fb1, act), X = FusedMatMul(G, F2, fb2,
// residual Hf): a post-LN transformer's feed-forward block as the earlier passes leave it.
ValueId feed_forward(GraphBuilder& b, ValueId x0, const HeadOptions& h) {
  Attributes ln;
  ln.set("epsilon", float_attr(1e-5f));
  ValueId hf = b.node("LayerNormalization",
                      {x0, b.constant("ffn_gamma", random_tensor({E}, 11)), b.constant("ffn_beta", random_tensor({E}, 12))}, ln);
  Attributes first;
  if (h.ffn != "-") first.set("activation", string_attr(h.ffn));
  ValueId g = b.node("FusedMatMul", {hf, b.constant("F1", random_tensor({E, FF}, 13)), b.constant("fb1", random_tensor({FF}, 14))},
                     first, "ingot");
  if (h.ffn_shared) b.output(hf);
  return b.node("FusedMatMul",
                {g, b.constant("F2", random_tensor({FF, E}, 15)), b.constant("fb2", random_tensor({E}, 16)), hf}, Attributes{},
                "ingot");
}

// X [B, E] → LayerNormalization → FusedMatMul(W1, b1) [→ unary] → FusedMatMul(W2, b2), as the
// optimizer's earlier passes leave a classifier's head; with h.ffn, X is the output of a
// feed-forward block.
Model head_model(const HeadOptions& h) {
  GraphBuilder b("test:classifier_head");
  ValueId x = b.input("X", DType::kFloat32, {B, E});
  if (!h.ffn.empty()) x = feed_forward(b, x, h);
  Attributes ln;
  ln.set("axis", int_attr(-1));
  ln.set("epsilon", float_attr(1e-6f));
  ValueId xn = b.node("LayerNormalization",
                      {x, b.constant("gamma", random_tensor({E}, 1)), b.constant("beta", random_tensor({E}, 2))}, ln);
  Attributes first;
  first.set("activation", string_attr(h.fused_act));
  ValueId hid = b.node("FusedMatMul", {xn, b.constant("W1", random_tensor({E, F}, 3)), b.constant("b1", random_tensor({F}, 4))},
                       first, "ingot");
  if (!h.unary.empty()) hid = b.node(h.unary, {hid});
  Attributes second;
  if (h.second_act) second.set("activation", string_attr("Relu"));
  b.output(b.node("FusedMatMul",
                  {hid, b.constant("W2", random_tensor({F, h.logits}, 5)), b.constant("b2", random_tensor({h.logits}, 6))},
                  second, "ingot"));
  if (h.hidden_output) b.output(hid);
  return b.m;
}

TEST(FuseClassifierHead, EveryActivationFormFusesForCudaAndMatchesTheOps) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, E}, 7, -3, 3)}};
  const HeadOptions cases[] = {{"Relu", ""}, {"", "Tanh"}, {"", "Relu"}, {"Gelu", ""}, {"GeluTanh", ""}, {"", ""},
                               {"Relu", "", 8}, {"", "Tanh", 1}};
  for (const HeadOptions& h : cases) {
    const std::string what = "activation '" + h.fused_act + "' then '" + h.unary + "', " + std::to_string(h.logits) +
                             " logits";
    const Model original = head_model(h);
    auto [cuda, rewrites] = optimized_for(original, "cuda");
    EXPECT_EQ(rewrites, 1) << what;
    ASSERT_EQ(cuda.graph.nodes.size(), 1u) << what;
    const Node& n = cuda.graph.nodes[0];
    EXPECT_EQ(n.op_type, "ClassifierHead") << what;
    EXPECT_EQ(n.attrs.get_string("activation", "?"), h.unary.empty() ? h.fused_act : h.unary) << what;
    EXPECT_FLOAT_EQ(n.attrs.get_float("epsilon", 0.f), 1e-6f) << what;
    const auto fused_out = run_as_is(cuda, feeds), ops_out = run_as_is(original, feeds);
    EXPECT_LE(max_output_diff(fused_out, ops_out), 2e-5) << what;
    for (size_t i = 0; i < fused_out.size() && i < ops_out.size(); ++i)
      EXPECT_EQ(fused_out[i].tensor.dtype(), ops_out[i].tensor.dtype()) << what;

    auto [cpu, cpu_rewrites] = optimized_for(original, "cpu");
    EXPECT_EQ(cpu_rewrites, 0) << what;
    EXPECT_EQ(heads(cpu), 0) << what;
  }
}

TEST(FuseClassifierHead, FeedForwardBlockJoinsTheHeadAndMatchesTheOps) {
  const std::map<std::string, Tensor> feeds{{"X", random_tensor({B, E}, 7, -3, 3)}};
  for (const char* act : {"Gelu", "Relu", "-", "GeluTanh"}) {
    HeadOptions h{"Relu", ""};
    h.ffn = act;
    const std::string what = std::string("block activation ") + act;
    const Model original = head_model(h);
    auto [cuda, rewrites] = optimized_for(original, "cuda");
    EXPECT_EQ(rewrites, 1) << what;
    ASSERT_EQ(cuda.graph.nodes.size(), 1u) << what;
    const Node& n = cuda.graph.nodes[0];
    ASSERT_EQ(n.inputs.size(), 13u) << what;
    EXPECT_EQ(n.inputs[0], original.graph.inputs[0]) << what;
    EXPECT_EQ(n.attrs.get_string("ffn_activation", "?"), std::string(act) == "-" ? "" : act) << what;
    EXPECT_FLOAT_EQ(n.attrs.get_float("ffn_epsilon", 0.f), 1e-5f) << what;
    EXPECT_LE(max_output_diff(run_as_is(cuda, feeds), run_as_is(original, feeds)), 2e-5) << what;
  }
  // Hf read by a third reader (here a graph output): the head fuses, the block stays.
  HeadOptions shared{"Relu", ""};
  shared.ffn = "Gelu";
  shared.ffn_shared = true;
  auto [cuda, rewrites] = optimized_for(head_model(shared), "cuda");
  EXPECT_EQ(rewrites, 1);
  EXPECT_EQ(heads(cuda), 1);
  for (const Node& n : cuda.graph.nodes)
    if (n.op_type == "ClassifierHead") EXPECT_EQ(n.inputs.size(), 7u);
  EXPECT_EQ(heads(optimized_for(head_model(shared), "cpu").first), 0);
}

TEST(FuseClassifierHead, SharedIntermediateWideOrActivatedLogitsStayUnfused) {
  HeadOptions shared{"Relu", ""};
  shared.hidden_output = true;
  HeadOptions wide{"Relu", ""};
  wide.logits = 9;
  HeadOptions activated{"Relu", ""};
  activated.second_act = true;
  HeadOptions twice{"Relu", "Tanh"};  // an activation on both sides of the first product's store
  for (const auto& [h, what] : {std::pair{shared, "H also an output"}, std::pair{wide, "9 logits"},
                                std::pair{activated, "ReLU on the logits"}, std::pair{twice, "two activations"}}) {
    auto [cuda, rewrites] = optimized_for(head_model(h), "cuda");
    EXPECT_EQ(rewrites, 0) << what;
    EXPECT_EQ(heads(cuda), 0) << what;
  }
}

// Builds m as it is (no optimizer) and runs it on X [B, E] (and R [B, 3, E] when it has that
// input): "" when it ran, else the error line.
std::string run_message(const Model& m) {
  EngineOptions o;
  o.optimize = false;
  auto e = Engine::from_model(m, o);
  if (!e) return e.status().message();
  std::map<std::string, Tensor> feeds{{"X", random_tensor({B, E}, 7)}};
  for (ValueId v : m.graph.inputs)
    if (m.graph.value(v).name == "R") feeds["R"] = random_tensor({B, 3, E}, 8);
  auto out = (*e)->create_context()->run(feeds);
  return out ? std::string() : out.status().message();
}

// The op's CPU kernel on its own: the float32 output attribute, and one clear line for each
// malformed input or attribute.
TEST(FuseClassifierHead, KernelChecksItsInputsAndAttributes) {
  auto attempt = [](Shape w1_shape, Shape b2_shape, const std::string& act, DType gamma_dtype) {
    GraphBuilder b("test:classifier_head_op");
    ValueId x = b.input("X", DType::kFloat32, {B, E});
    Tensor gamma = random_tensor({E}, 1);
    if (gamma_dtype != DType::kFloat32) gamma = Tensor(gamma_dtype, {E});
    Attributes a;
    a.set("activation", string_attr(act));
    b.output(b.node("ClassifierHead",
                    {x, b.constant("gamma", gamma), kNoValue, b.constant("W1", random_tensor(w1_shape, 3)), kNoValue,
                     b.constant("W2", random_tensor({F, 2}, 5)), b.constant("b2", random_tensor(b2_shape, 6))},
                    a, "ingot"));
    return run_message(b.m);
  };
  EXPECT_EQ(attempt({E, F}, {2}, "Tanh", DType::kFloat32), "");
  const std::string k = attempt({E + 1, F}, {2}, "Tanh", DType::kFloat32);
  EXPECT_NE(k.find("input 3 (W1) has shape 17x24, expected [16, N1]"), std::string::npos) << k;
  const std::string b2 = attempt({E, F}, {3}, "Tanh", DType::kFloat32);
  EXPECT_NE(b2.find("input 6 (b2) has shape 3, expected [2]"), std::string::npos) << b2;
  const std::string act = attempt({E, F}, {2}, "Swish", DType::kFloat32);
  EXPECT_NE(act.find("attribute 'activation' = 'Swish'"), std::string::npos) << act;
  const std::string dt = attempt({E, F}, {2}, "Tanh", DType::kFloat16);
  EXPECT_NE(dt.find("input 1 (gamma) has dtype float16, X has float32"), std::string::npos) << dt;

  // With the feed-forward block's inputs.
  auto attempt_ffn = [](Shape f2_shape, bool with_f1, const std::string& act) {
    GraphBuilder b("test:classifier_head_ffn_op");
    ValueId x = b.input("X", DType::kFloat32, {B, E});
    Attributes a;
    a.set("ffn_activation", string_attr(act));
    b.output(b.node("ClassifierHead",
                    {x, b.constant("gamma", random_tensor({E}, 1)), kNoValue, b.constant("W1", random_tensor({E, F}, 3)),
                     kNoValue, b.constant("W2", random_tensor({F, 2}, 5)), kNoValue,
                     b.constant("ffn_gamma", random_tensor({E}, 11)), kNoValue,
                     with_f1 ? b.constant("F1", random_tensor({E, FF}, 13)) : kNoValue, kNoValue,
                     b.constant("F2", random_tensor(f2_shape, 15)), kNoValue},
                    a, "ingot"));
    return run_message(b.m);
  };
  EXPECT_EQ(attempt_ffn({FF, E}, true, "Gelu"), "");
  const std::string f2 = attempt_ffn({FF, E + 1}, true, "Gelu");
  EXPECT_NE(f2.find("input 11 (F2) has shape 40x17, expected [40, 16]"), std::string::npos) << f2;
  const std::string f1 = attempt_ffn({FF, E}, false, "Gelu");
  EXPECT_NE(f1.find("input 9"), std::string::npos) << f1;
  const std::string fa = attempt_ffn({FF, E}, true, "Tanh");
  EXPECT_NE(fa.find("attribute 'ffn_activation' = 'Tanh'"), std::string::npos) << fa;

  // With the output projection's inputs too (X the context, R [B, 3, E] read at a position).
  auto attempt_projection = [](Shape wo_shape, Shape r_shape, int64_t position) {
    GraphBuilder b("test:classifier_head_projection_op");
    ValueId x = b.input("X", DType::kFloat32, {B, E});
    Attributes a;
    a.set("ffn_activation", string_attr("Gelu"));
    a.set("residual_position", int_attr(position));
    b.output(b.node("ClassifierHead",
                    {x, b.constant("gamma", random_tensor({E}, 1)), kNoValue, b.constant("W1", random_tensor({E, F}, 3)),
                     kNoValue, b.constant("W2", random_tensor({F, 2}, 5)), kNoValue,
                     b.constant("ffn_gamma", random_tensor({E}, 11)), kNoValue, b.constant("F1", random_tensor({E, FF}, 13)),
                     kNoValue, b.constant("F2", random_tensor({FF, E}, 15)), kNoValue,
                     b.constant("Wo", random_tensor(wo_shape, 17)), kNoValue, b.input("R", DType::kFloat32, r_shape)},
                    a, "ingot"));
    return run_message(b.m);
  };
  EXPECT_EQ(attempt_projection({E, E}, {B, 3, E}, -1), "");
  const std::string wo = attempt_projection({E + 1, E}, {B, 3, E}, 0);
  EXPECT_NE(wo.find("input 13 (Wo) has shape 17x16, expected [16, K]"), std::string::npos) << wo;
  const std::string r = attempt_projection({E, E}, {B, 3, E + 1}, 0);
  EXPECT_NE(r.find("input 15 (R) has shape"), std::string::npos) << r;
  const std::string pos = attempt_projection({E, E}, {B, 3, E}, 3);
  EXPECT_NE(pos.find("attribute 'residual_position' = 3 is outside [-3, 3)"), std::string::npos) << pos;
}

// The sequence classifiers of both exporters: the head after the last layer is one
// ClassifierHead for CUDA, and the rewritten graph still matches PyTorch's logits on the CPU.
TEST(FuseClassifierHead, SequenceClassifierFixtures) {
  for (const char* model : {"bert", "distilbert", "roberta"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      const std::string what = std::string(model) + "/" + ex;
      auto f = load_fixture_files(model, ex);
      ASSERT_TRUE(f.has_value()) << what << ": " << f.status().message();
      auto [cuda, rewrites] = optimized_for(std::move(f->model), "cuda", {f->shapes});
      EXPECT_EQ(rewrites, 1) << what;
      EXPECT_EQ(heads(cuda), 1) << what;
      for (const Node& n : cuda.graph.nodes)
        if (n.op_type == "ClassifierHead") {
          EXPECT_EQ(n.attrs.get_string("activation", "?"), std::string(model) == "distilbert" ? "Relu" : "Tanh") << what;
          // The last layer's feed-forward block (post-LN, GELU) is part of it, and so are the
          // output projection and residual of its attention row, which outputs its context.
          EXPECT_EQ(n.inputs.size(), 16u) << what;
          EXPECT_EQ(n.attrs.get_string("ffn_activation", "?"), "Gelu") << what;
          EXPECT_EQ(n.attrs.get_int("residual_position", -7), 0) << what;
        }
      int attentions_with_projection = 0, attentions = 0;
      for (const Node& n : cuda.graph.nodes)
        if (n.op_type == "Attention") ++attentions, attentions_with_projection += n.inputs.size() > 4;
      EXPECT_EQ(attentions_with_projection, attentions - 1) << what;
      auto outs = run_as_is(cuda, f->inputs);
      ASSERT_FALSE(outs.empty()) << what;
      for (const auto& o : outs)
        EXPECT_LE(max_abs_error(o.tensor, f->reference.at(o.name)), 1e-4) << what << " output " << o.name;
    }
  }
}

// The attention row's output read elsewhere too (here: a graph output, added between the two
// optimizer stages): its projection stays in the attention, the block and the head still fuse,
// and the logits match PyTorch's.
TEST(FuseClassifierHead, AttentionOutputWithAnotherReaderKeepsItsProjection) {
  auto f = load_fixture_files("distilbert", "torchscript");
  ASSERT_TRUE(f.has_value()) << f.status().message();
  Model m = std::move(f->model);
  OptimizeOptions o;
  o.device = "cuda";
  o.bindings = {f->shapes};
  o.stage = PassStage::kBeforePrecision;
  ASSERT_TRUE(optimize(m, o).has_value());
  ValueId row = kNoValue;
  for (const Node& n : m.graph.nodes)
    if (n.op_type == "Attention" && n.attrs.has("query_rows")) row = n.outputs[0];
  ASSERT_NE(row, kNoValue);
  m.graph.outputs.push_back(row);
  o.stage = PassStage::kAfterPrecision;
  auto reports = optimize(m, o);
  ASSERT_TRUE(reports.has_value()) << reports.status().message();
  EXPECT_EQ(rewrites_of(*reports, "fuse_classifier_head"), 1);
  EXPECT_EQ(heads(m), 1);
  for (const Node& n : m.graph.nodes) {
    if (n.op_type == "ClassifierHead") EXPECT_EQ(n.inputs.size(), 13u);
    if (n.op_type == "Attention" && n.attrs.has("query_rows")) EXPECT_EQ(n.inputs.size(), 7u);
  }
  auto outs = run_as_is(m, f->inputs);
  ASSERT_FALSE(outs.empty());
  for (const auto& out : outs)
    if (f->reference.count(out.name)) EXPECT_LE(max_abs_error(out.tensor, f->reference.at(out.name)), 1e-4) << out.name;
}

}  // namespace
}  // namespace ingot
