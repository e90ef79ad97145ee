// fuse_feed_forward: for CUDA engines FusedMatMul (activation) → FusedMatMul (bias, residual X)
// → LayerNormalization becomes one ingot.FeedForward; CPU engines keep the ops. The fused node
// computes what the ops did (its CPU kernel, the CUDA kernel's reference, against the unfused
// graph on the CPU); a shared intermediate, a residual other than the block's input, a narrow or
// unaligned width or a LayerNorm over another axis stops it; the op's kernel rejects bad inputs
// with one line naming them; and the post-LN fixtures of both exporters get one node per layer
// left of the classifier's head, their outputs still PyTorch's. The pass is opt-in for now
// (INGOT_CUDA_FEED_FORWARD=1): without the variable it rewrites nothing.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

// INGOT_CUDA_FEED_FORWARD=1 for a test's lifetime (the pass is opt-in for now).
class FeedForwardOn {
 public:
  FeedForwardOn() { ::setenv("INGOT_CUDA_FEED_FORWARD", "1", 1); }
  ~FeedForwardOn() { ::unsetenv("INGOT_CUDA_FEED_FORWARD"); }
  FeedForwardOn(const FeedForwardOn&) = delete;
  FeedForwardOn& operator=(const FeedForwardOn&) = delete;
};

constexpr int64_t B = 3, E = 16, F = 40;

int count_of(const Model& m, const std::string& op) {
  int n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

struct BlockOptions {
  std::string act = "Gelu";   // the first product's activation ("" none)
  bool g_output = false;      // G is a graph output too
  bool z_output = false;      // the block's sum is a graph output too
  bool other_residual = false;  // the second product's residual is another input R
  int64_t axis = -1;          // the LayerNorm's
  int64_t width = E;          // K
};

// X [B, K] → FusedMatMul(W1, b1, act) → FusedMatMul(W2, b2, residual X) → LayerNormalization,
// as fuse_linear, fuse_layer_norm and fold_residual_into_product leave a post-LN layer's block.
Model block_model(const BlockOptions& o) {
  const int64_t K = o.width;
  GraphBuilder b("test:feed_forward");
  ValueId x = b.input("X", DType::kFloat32, {B, K});
  Attributes first;
  if (!o.act.empty()) first.set("activation", string_attr(o.act));
  ValueId g = b.node("FusedMatMul", {x, b.constant("W1", random_tensor({K, F}, 1, -0.3, 0.3)), b.constant("b1", random_tensor({F}, 2))},
                     first, "ingot");
  ValueId r = o.other_residual ? b.input("R", DType::kFloat32, {B, K}) : x;
  ValueId z = b.node("FusedMatMul", {g, b.constant("W2", random_tensor({F, K}, 3, -0.3, 0.3)), b.constant("b2", random_tensor({K}, 4)), r},
                     Attributes{}, "ingot");
  Attributes ln;
  ln.set("epsilon", float_attr(1e-6f));
  if (o.axis != -1) ln.set("axis", int_attr(o.axis));
  b.output(b.node("LayerNormalization", {z, b.constant("gamma", random_tensor({K}, 5)), b.constant("beta", random_tensor({K}, 6))}, ln));
  if (o.g_output) b.output(g);
  if (o.z_output) b.output(z);
  return b.m;
}

std::map<std::string, Tensor> feeds_for(const BlockOptions& o) {
  std::map<std::string, Tensor> f{{"X", random_tensor({B, o.width}, 7, -2, 2)}};
  if (o.other_residual) f["R"] = random_tensor({B, o.width}, 8, -2, 2);
  return f;
}

TEST(FuseFeedForward, OffUnlessAskedFor) {
  auto [cuda, rewrites] = optimized_both_stages(block_model({}), "cuda", "fuse_feed_forward");
  EXPECT_EQ(rewrites, 0);
  EXPECT_EQ(count_of(cuda, "FeedForward"), 0);
}

TEST(FuseFeedForward, EveryActivationFusesForCudaAndMatchesTheOps) {
  const FeedForwardOn on;
  for (const char* act : {"Gelu", "GeluTanh", "Relu", ""}) {
    BlockOptions o;
    o.act = act;
    const Model original = block_model(o);
    auto [cuda, rewrites] = optimized_both_stages(original, "cuda", "fuse_feed_forward");
    EXPECT_EQ(rewrites, 1) << act;
    ASSERT_EQ(cuda.graph.nodes.size(), 1u) << act;
    const Node& n = cuda.graph.nodes[0];
    EXPECT_EQ(n.op_type, "FeedForward") << act;
    EXPECT_EQ(n.attrs.get_string("activation", "?"), act);
    EXPECT_FLOAT_EQ(n.attrs.get_float("epsilon", 0.f), 1e-6f) << act;
    EXPECT_LE(max_output_diff(run_as_is(cuda, feeds_for(o)), run_as_is(original, feeds_for(o))), 2e-5) << act;

    auto [cpu, cpu_rewrites] = optimized_both_stages(original, "cpu", "fuse_feed_forward");
    EXPECT_EQ(cpu_rewrites, 0) << act;
    EXPECT_EQ(count_of(cpu, "FeedForward"), 0) << act;
  }
}

TEST(FuseFeedForward, OtherReadersResidualsWidthsOrAxesStayUnfused) {
  const FeedForwardOn on;
  BlockOptions g_out, z_out, other, axis0, narrow, unaligned;
  g_out.g_output = true;
  z_out.z_output = true;
  other.other_residual = true;
  axis0.axis = 0;
  narrow.width = 8;      // the narrow-product kernel's width on CUDA
  unaligned.width = 18;  // 72-byte rows
  for (auto [what, o] : {std::pair<const char*, BlockOptions>{"G read elsewhere", g_out}, {"sum read elsewhere", z_out},
                         {"another residual", other}, {"LayerNorm over axis 0", axis0}, {"K = 8", narrow},
                         {"K = 18", unaligned}}) {
    auto [cuda, rewrites] = optimized_both_stages(block_model(o), "cuda", "fuse_feed_forward");
    EXPECT_EQ(rewrites, 0) << what;
    EXPECT_EQ(count_of(cuda, "FeedForward"), 0) << what;
  }
}

// Builds m as it is (no optimizer) and runs it on X [B, K]: "" when it ran, else the error line.
std::string feed_forward_message(Shape w2_shape, Shape b1_shape, const std::string& act, DType gamma_dtype, int inputs = 7) {
  GraphBuilder b("test:feed_forward_op");
  Tensor gamma = random_tensor({E}, 5);
  if (gamma_dtype != DType::kFloat32) gamma = Tensor(gamma_dtype, {E});
  std::vector<ValueId> in = {b.input("X", DType::kFloat32, {B, E}), b.constant("W1", random_tensor({E, F}, 1)),
                             b.constant("b1", random_tensor(b1_shape, 2)), b.constant("W2", random_tensor(w2_shape, 3)),
                             kNoValue, b.constant("gamma", gamma), kNoValue};
  in.resize(size_t(inputs), kNoValue);
  Attributes a;
  a.set("activation", string_attr(act));
  b.output(b.node("FeedForward", in, a, "ingot"));
  EngineOptions eo;
  eo.optimize = false;
  auto e = Engine::from_model(b.m, eo);
  if (!e) return e.status().message();
  auto out = (*e)->create_context()->run({{"X", random_tensor({B, E}, 7)}});
  return out ? std::string() : out.status().message();
}

TEST(FuseFeedForward, KernelChecksItsInputsAndAttributes) {
  EXPECT_EQ(feed_forward_message({F, E}, {F}, "Gelu", DType::kFloat32), "");
  const std::string w2 = feed_forward_message({F, E + 1}, {F}, "Gelu", DType::kFloat32);
  EXPECT_NE(w2.find("input 3 (W2) has shape 40x17, expected [40, 16]"), std::string::npos) << w2;
  const std::string b1 = feed_forward_message({F, E}, {F + 1}, "Gelu", DType::kFloat32);
  EXPECT_NE(b1.find("input 2 (b1) has shape 41, expected [40]"), std::string::npos) << b1;
  const std::string act = feed_forward_message({F, E}, {F}, "Tanh", DType::kFloat32);
  EXPECT_NE(act.find("attribute 'activation' = 'Tanh'"), std::string::npos) << act;
  const std::string dt = feed_forward_message({F, E}, {F}, "Gelu", DType::kFloat16);
  EXPECT_NE(dt.find("input 5 (gamma) has dtype float16, X has float32"), std::string::npos) << dt;
  const std::string n = feed_forward_message({F, E}, {F}, "Gelu", DType::kFloat32, 6);
  EXPECT_NE(n.find("needs 7 inputs"), std::string::npos) << n;
}

// The post-LN fixtures optimized for CUDA: every layer's block but the classifier's last (which
// its head takes) is one FeedForward, and the outputs still match PyTorch's at 1e-4.
TEST(FuseFeedForward, PostLnFixtures) {
  const FeedForwardOn on;
  for (const char* model : {"bert", "distilbert", "roberta"}) {
    for (const char* exporter : {"torchscript", "dynamo"}) {
      const std::string what = std::string(model) + " " + exporter;
      auto files = load_fixture_files(model, exporter);
      ASSERT_TRUE(files.has_value()) << what << ": " << files.status().message();
      auto [cuda, rewrites] = optimized_both_stages(std::move(files->model), "cuda", "fuse_feed_forward", {files->shapes});
      EXPECT_GE(rewrites, 1) << what;
      EXPECT_EQ(count_of(cuda, "FeedForward"), rewrites) << what;
      EXPECT_EQ(count_of(cuda, "ClassifierHead"), 1) << what;
      for (const NamedTensor& out : run_as_is(cuda, files->inputs)) {
        ASSERT_TRUE(files->reference.count(out.name)) << what << ": no reference for " << out.name;
        EXPECT_LE(max_abs_error(out.tensor, files->reference.at(out.name)), 1e-4) << what << " " << out.name;
      }
    }
  }
}

}  // namespace
}  // namespace ingot
