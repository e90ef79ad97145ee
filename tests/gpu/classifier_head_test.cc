// ingot.ClassifierHead on CUDA against its CPU kernel: the one-kernel path (1 and 2 rows) and the
// composed path (more rows), float32/float16/bfloat16, every activation, logits 1 to 8 wide in
// X's dtype or float32, hidden widths of one or several column groups per CTA, K that needs more
// than one round of register loads or is odd, optional beta and biases; each engine is run three
// times, so the CUDA graph's replays are checked as well as its eager first run (and the grid
// counter the last CTA resets). The same with the feed-forward block before the head.
#include <cmath>

#include "../ops/graph_builder.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Case {
  DType dt;
  int64_t rows, K, N1, N2;
  const char* act;
  bool float_out = false, biases = true;
  bool runtime_w1 = false;  // W1 a graph input instead of a constant
  int64_t NF = 0;           // > 0: the feed-forward block before the head, NF wide
  const char* ffn_act = "Gelu";
  int64_t S = 0;            // > 0: the output projection before the block, its residual [rows, S, K]
  int64_t position = 0;     // the residual's row in S
};

Model head_model(const Case& c, const std::vector<Tensor>& w) {
  Attributes a;
  a.set("activation", string_attr(c.act));
  a.set("epsilon", float_attr(1e-12f));
  if (c.float_out) a.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
  GraphBuilder b("test:classifier_head_gpu");
  ValueId x = b.input("X", c.dt, {c.rows, c.K});
  auto opt = [&](size_t i, const char* name) { return c.biases ? b.constant(name, w[i]) : kNoValue; };
  const ValueId w1 = c.runtime_w1 ? b.input("W1", c.dt, {c.K, c.N1}) : b.constant("W1", w[2]);
  std::vector<ValueId> inputs = {x, b.constant("gamma", w[0]), opt(1, "beta"), w1, opt(3, "b1"),
                                 b.constant("W2", w[4]), opt(5, "b2")};
  if (c.NF > 0) {
    a.set("ffn_activation", string_attr(c.ffn_act));
    a.set("ffn_epsilon", float_attr(1e-5f));
    for (ValueId v : {b.constant("ffn_gamma", w[6]), opt(7, "ffn_beta"), b.constant("F1", w[8]), opt(9, "fb1"),
                      b.constant("F2", w[10]), opt(11, "fb2")})
      inputs.push_back(v);
  }
  if (c.S > 0) {
    a.set("residual_position", int_attr(c.position));
    for (ValueId v : {b.constant("Wo", w[12]), opt(13, "bo"), b.input("R", c.dt, {c.rows, c.S, c.K})}) inputs.push_back(v);
  }
  b.output(b.node("ClassifierHead", inputs, a, "ingot"));
  if (c.float_out) b.m.graph.value(b.m.graph.outputs[0]).dtype = DType::kFloat32;
  return b.m;
}

void check(const Case& c) {
  const std::string what = dtype_name(c.dt) + " rows " + std::to_string(c.rows) + " K " + std::to_string(c.K) +
                           " N1 " + std::to_string(c.N1) + " N2 " + std::to_string(c.N2) + " act '" + c.act + "'" +
                           (c.float_out ? " -> float32" : "") + (c.biases ? "" : " no beta/biases") +
                           (c.runtime_w1 ? " runtime W1" : "") +
                           (c.NF > 0 ? std::string(" block NF ") + std::to_string(c.NF) + " '" + c.ffn_act + "'" : "") +
                           (c.S > 0 ? " projection, residual at " + std::to_string(c.position) + " of " + std::to_string(c.S) : "");
  // Weights of a trained head's scale: H and the logits stay near 1.
  const std::vector<Tensor> w = {random_of(c.dt, {c.K}, 1, 0.5, 1.5), random_of(c.dt, {c.K}, 2, -0.5, 0.5),
                                 random_of(c.dt, {c.K, c.N1}, 3, -0.06, 0.06), random_of(c.dt, {c.N1}, 4, -0.5, 0.5),
                                 random_of(c.dt, {c.N1, c.N2}, 5, -0.06, 0.06), random_of(c.dt, {c.N2}, 6, -0.5, 0.5),
                                 random_of(c.dt, {c.K}, 8, 0.5, 1.5), random_of(c.dt, {c.K}, 9, -0.5, 0.5),
                                 random_of(c.dt, {c.K, std::max<int64_t>(c.NF, 1)}, 10, -0.06, 0.06),
                                 random_of(c.dt, {std::max<int64_t>(c.NF, 1)}, 11, -0.5, 0.5),
                                 random_of(c.dt, {std::max<int64_t>(c.NF, 1), c.K}, 12, -0.03, 0.03),
                                 random_of(c.dt, {c.K}, 13, -0.5, 0.5),
                                 random_of(c.dt, {c.K, c.K}, 14, -0.06, 0.06), random_of(c.dt, {c.K}, 15, -0.5, 0.5)};
  const Model m = head_model(c, w);
  std::map<std::string, Tensor> feeds{{"X", random_of(c.dt, {c.rows, c.K}, 7, -2, 2)}};
  if (c.S > 0) feeds["R"] = random_of(c.dt, {c.rows, c.S, c.K}, 16, -2, 2);
  if (c.runtime_w1) feeds["W1"] = w[2];
  auto ref = run_model_on(m, feeds, "cpu");
  ASSERT_EQ(ref.size(), 1u) << what;
  // Both sides round the normalized rows and H to X's dtype; they differ by summation order (and
  // for half GELU on the composed path, cuBLASLt's tanh form), so a rounding of H may flip.
  // The block adds two more such roundings (G and its output) before the head's LayerNorm.
  const double tol = c.dt == DType::kFloat32 ? 1e-4 : (c.dt == DType::kFloat16 ? 3e-3 : 2e-2) * (c.NF > 0 ? 2 : 1);
  expect_cuda_runs_match(m, feeds, ref[0], tol, what);
}

TEST(GpuClassifierHead, OneKernelPathMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t rows : {1, 2}) check({dt, rows, 768, 768, 2, "Relu"});
    for (const char* act : {"", "Tanh", "Gelu", "GeluTanh"}) check({dt, 1, 768, 768, 2, act, true});
    check({dt, 2, 1024, 3072, 8, "Tanh"});  // several column groups per CTA, not dividing its threads
    check({dt, 1, 37, 64, 1, "Relu", true});  // odd K
    check({dt, 2, 96, 200, 3, "Tanh", false, false});  // no beta or biases
    check({dt, 1, 768, 768, 2, "Relu", false, true, true});
    check({dt, 2, 1024, 3072, 8, "Tanh", true, true, true});
  }
}

// The head with the feed-forward block: one kernel (classifier_tail.cu) for 1 and 2 rows, the
// block's three kernels and the head's otherwise (at 32 rows of float16/bfloat16 the block's second
// product split over K, the head's LayerNorm summing the parts: product_norm.h); DistilBERT's
// sizes, a block narrower than the SMs' count of column groups, every block activation, no beta or
// biases.
TEST(GpuClassifierHead, WithFeedForwardBlockMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t rows : {1, 2, 3, 8, 32}) {
      Case c{dt, rows, 768, 768, 2, "Relu"};
      c.NF = 3072;
      check(c);
    }
    Case bare{dt, 32, 768, 768, 2, "Tanh", false, false};  // split, without beta or biases
    bare.NF = 3072;
    check(bare);
    for (const char* act : {"", "Relu", "GeluTanh"}) {
      Case c{dt, 1, 768, 768, 2, "Tanh", true};
      c.NF = 3072, c.ffn_act = act;
      check(c);
    }
    Case small{dt, 2, 64, 48, 3, "Tanh", false, false};  // few column groups, no beta or biases
    small.NF = 128;
    check(small);
    Case wide{dt, 1, 1024, 1024, 8, "Relu"};  // the widest K the one kernel takes
    wide.NF = 4096;
    check(wide);
  }
}

// With the attention's output projection and residual before the block as well: the residual's
// row first, last (counted from the end) or alone in its sequence, one kernel and composed.
TEST(GpuClassifierHead, WithProjectionMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t rows : {1, 2, 3, 32}) {
      Case c{dt, rows, 768, 768, 2, "Tanh"};
      c.NF = 3072, c.S = 5, c.position = rows == 2 ? -1 : 0;
      check(c);
    }
    Case alone{dt, 1, 64, 48, 3, "Relu", false, false};  // no beta or biases, S = 1
    alone.NF = 128, alone.S = 1;
    check(alone);
  }
}

TEST(GpuClassifierHead, ComposedPathMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t rows : {3, 8}) check({dt, rows, 768, 768, 2, "Relu"});
    check({dt, 1, 1030, 768, 2, "Relu"});  // K past the one kernel's 1024
    check({dt, 33, 768, 768, 2, "Tanh", true});
    check({dt, 17, 64, 48, 5, "Gelu", false, false});
  }
  check({DType::kFloat16, 2, 64, 36, 2, "Relu"});  // N1 not a whole number of 16-byte vectors
}

}  // namespace
}  // namespace ingot::testing
