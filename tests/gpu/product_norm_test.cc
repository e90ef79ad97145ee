// A product with the LayerNorm after it (ingot.FusedMatMul with inputs 4-5; product_norm_impl.h):
// which shapes the fused kernel takes (host arithmetic, runs without a GPU), and through the
// Engine against the CPU kernel and against the unfused pair on the GPU (FusedMatMul, then the
// LayerNormalization kernel): BERT's two b32 shapes (the fused kernel on a 132-SM Hopper), rows
// and depths that are not tile multiples, no residual, no bias, no beta, bfloat16, a width of
// one column block, and shapes the fused kernel leaves to cuBLASLt + LayerNorm; run after run
// the same bits (the row blocks' counters go back to zero). And the K split of few-row deep
// products (product_norm.h: a batched product into float32 partials, summed by the LayerNorm
// kernel): which shapes it takes, and its output against the same references.
#include <cstdlib>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "backends/cuda/product_norm.h"
#include "backends/cuda/product_norm_impl.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

using cuda::product_norm_fits;

TEST(ProductNormFits, FullWavesOfHopperTilesOnly) {
  const DType h = DType::kFloat16;
  EXPECT_TRUE(product_norm_fits(h, 4096, 768, 768, 132, 9, 0));    // BERT-base b32: 128 tiles
  EXPECT_TRUE(product_norm_fits(h, 4096, 768, 3072, 132, 9, 0));
  EXPECT_TRUE(product_norm_fits(DType::kBFloat16, 4000, 768, 1000, 132, 9, 0));
  EXPECT_FALSE(product_norm_fits(h, 4096, 768, 768, 114, 9, 0));   // more tiles than SMs
  EXPECT_FALSE(product_norm_fits(h, 2048, 768, 768, 132, 9, 0));   // half the SMs idle
  EXPECT_FALSE(product_norm_fits(h, 128, 768, 768, 132, 9, 0));
  EXPECT_FALSE(product_norm_fits(DType::kFloat32, 4096, 768, 768, 132, 9, 0));
  EXPECT_FALSE(product_norm_fits(h, 4096, 768, 768, 132, 8, 9));   // not Hopper
  EXPECT_FALSE(product_norm_fits(h, 4096, 768, 768, 132, 10, 0));
  EXPECT_FALSE(product_norm_fits(h, 4096, 1024, 768, 132, 9, 0));  // not a multiple of 192
  EXPECT_FALSE(product_norm_fits(h, 4096, 768, 100, 132, 9, 0));   // rows of A not 16-byte multiples
}

TEST(ProductNormSplit, DeepProductsOfFewRowsOnly) {
  using cuda::product_norm_split;
  const DType h = DType::kFloat16;
  if (std::getenv("INGOT_CUDA_NORM_SPLIT")) GTEST_SKIP() << "INGOT_CUDA_NORM_SPLIT overrides the rule";
  EXPECT_EQ(product_norm_split(h, 128, 768, 3072), 4);  // BERT's FFN 2 at batch 1
  EXPECT_EQ(product_norm_split(DType::kBFloat16, 512, 1024, 4096), 4);
  EXPECT_EQ(product_norm_split(h, 100, 768, 2304), 3);
  EXPECT_EQ(product_norm_split(h, 128, 768, 768), 0);   // K = N: nothing to split
  EXPECT_EQ(product_norm_split(h, 4096, 768, 3072), 0);  // enough rows for cuBLASLt's tiles
  EXPECT_EQ(product_norm_split(DType::kFloat32, 128, 768, 3072), 0);
  EXPECT_EQ(product_norm_split(h, 128, 768, 3000), 0);  // parts not whole 64-deep steps
  EXPECT_EQ(product_norm_split(h, 128, 2048, 8192), 0);  // rows longer than a warp holds
  EXPECT_EQ(cuda::product_norm_split_bytes(h, 128, 768, 3072), size_t(4 * 128 * 768 * 4));
  EXPECT_EQ(cuda::product_norm_split_bytes(h, 128, 768, 768), 0u);
}

struct NormCase {
  DType dt = DType::kFloat16;
  int64_t M = 4096, N = 768, K = 768;
  bool residual = true, bias = true, beta = true;
  std::string what() const {
    return dtype_name(dt) + " M" + std::to_string(M) + " N" + std::to_string(N) + " K" + std::to_string(K) +
           (residual ? " residual" : "") + (bias ? " bias" : "") + (beta ? " beta" : "");
  }
};

// The operands, rounded to c.dt: A and R fed, W, bias, gamma and beta constants; magnitudes as
// BERT's (W ~ 1/sqrt(K), so the sum is O(1), and a mean away from zero).
struct Operands {
  Tensor a, w, bias, r, gamma, beta;
};
Operands operands(const NormCase& c) {
  const double ws = 1.7 / std::sqrt(double(c.K));
  Operands o;
  o.a = random_of(c.dt, {c.M, c.K}, 61);
  o.w = random_of(c.dt, {c.K, c.N}, 62, -ws, ws);
  if (c.bias) o.bias = random_of(c.dt, {c.N}, 63, 0.5, 1.5);
  if (c.residual) o.r = random_of(c.dt, {c.M, c.N}, 64, -2, 2);
  o.gamma = random_of(c.dt, {c.N}, 65, 0.5, 1.5);
  if (c.beta) o.beta = random_of(c.dt, {c.N}, 66, -0.5, 0.5);
  return o;
}

ValueId add_value(Graph& g, const std::string& name, const Tensor& t, bool fed) {
  ValueId id = g.intern(name);
  g.value(id).dtype = t.dtype();
  if (fed) g.inputs.push_back(id);
  else g.initializers[id] = t;
  return id;
}

// fused: one FusedMatMul with inputs 4-5; else FusedMatMul (+ R) then LayerNormalization.
Model norm_model(const Operands& o, bool fused) {
  Model m;
  m.path = fused ? "test:FusedMatMul+norm" : "test:FusedMatMul,LayerNormalization";
  m.ir_version = 8;
  m.opsets[""] = 17;
  m.opsets["ingot"] = 1;
  Graph& g = m.graph;
  auto maybe = [&](const Tensor& t, const char* name, bool fed) { return t.defined() ? add_value(g, name, t, fed) : kNoValue; };
  Node p;
  p.op_type = "FusedMatMul", p.domain = "ingot", p.name = "product";
  p.inputs = {add_value(g, "A", o.a, true), add_value(g, "W", o.w, false), maybe(o.bias, "bias", false),
              maybe(o.r, "R", true)};
  const ValueId y = g.intern("Y");
  g.value(y).dtype = o.a.dtype();
  Attributes eps;
  if (fused) {
    p.inputs.push_back(add_value(g, "gamma", o.gamma, false));
    p.inputs.push_back(maybe(o.beta, "beta", false));
    p.attrs.set("norm_epsilon", float_attr(1e-5f));
    p.outputs = {y};
  } else {
    const ValueId s = g.intern("S");
    g.value(s).dtype = o.a.dtype();
    p.outputs = {s};
    Node ln;
    ln.op_type = "LayerNormalization", ln.name = "norm";
    ln.inputs = {s, add_value(g, "gamma", o.gamma, false), maybe(o.beta, "beta", false)};
    ln.attrs.set("axis", int_attr(-1));
    ln.attrs.set("epsilon", float_attr(1e-5f));
    ln.outputs = {y};
    g.nodes.push_back(std::move(p));
    p = std::move(ln);
  }
  while (p.inputs.back() == kNoValue) p.inputs.pop_back();
  g.nodes.push_back(std::move(p));
  g.outputs.push_back(y);
  return m;
}

Tensor as_f32(const Tensor& t) {
  Tensor r(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = float(t.scalar_as_double(i));
  return r;
}

// The fused node on CUDA against the unfused pair on CUDA (the same sum rounded to c.dt, then
// normalised in float32: within 2 ulps of the output) and against the CPU kernel (float32 from
// the rounded operands: within the output dtype's rounding of the sum, scaled by gamma / std).
// Returns the fused node's output.
Tensor check(const NormCase& c) {
  SCOPED_TRACE(c.what());
  const Operands o = operands(c);
  std::map<std::string, Tensor> feeds{{"A", o.a}};
  if (c.residual) feeds["R"] = o.r;
  auto got = run_model_on(norm_model(o, true), feeds, "cuda");
  auto pair = run_model_on(norm_model(o, false), feeds, "cuda");
  auto cpu = run_model_on(norm_model(o, true), feeds, "cpu");
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(pair.size(), 1u);
  EXPECT_EQ(cpu.size(), 1u);
  if (got.size() != 1 || pair.size() != 1 || cpu.size() != 1) return {};
  EXPECT_EQ(got[0].dtype(), c.dt);
  const double ulp = c.dt == DType::kFloat16 ? 1.0 / 1024 : c.dt == DType::kBFloat16 ? 1.0 / 128 : 1e-6;
  const Tensor g = as_f32(got[0]);
  expect_close(g, as_f32(pair[0]), 2 * ulp, 2 * ulp, "fused against cuBLASLt + LayerNorm");
  // The sum's rounding (|s| up to ~6, std ~1.2) moves each normalised value by up to ~3 ulps of 4.
  expect_close(g, as_f32(cpu[0]), 16 * ulp, 4 * ulp, "fused against the CPU");
  return got[0];
}

TEST(GpuProductNorm, BertBatch32Shapes) {
  INGOT_REQUIRE_GPU();
  check({DType::kFloat16, 4096, 768, 768});   // attention out-projection
  check({DType::kFloat16, 4096, 768, 3072});  // FFN 2
  check({DType::kBFloat16, 4096, 768, 768});
}

TEST(GpuProductNorm, PartialTilesAndAbsentOperands) {
  INGOT_REQUIRE_GPU();
  check({DType::kFloat16, 4000, 768, 1000});  // rows and depth past the last whole tile
  check({DType::kFloat16, 4096, 768, 768, false, true, true});
  check({DType::kFloat16, 4096, 768, 768, true, false, false});
  check({DType::kFloat16, 2560, 960, 512});   // five column blocks a row
}

TEST(GpuProductNorm, ShapesLeftToCublasLtAndLayerNorm) {
  INGOT_REQUIRE_GPU();
  check({DType::kFloat16, 64, 768, 768});
  check({DType::kFloat32, 300, 256, 128});
  check({DType::kBFloat16, 1000, 1024, 256});
}

TEST(GpuProductNorm, DeepProductsOfFewRowsSplitOverK) {
  INGOT_REQUIRE_GPU();
  check({DType::kFloat16, 128, 768, 3072});   // BERT's FFN 2 at batch 1: four parts
  check({DType::kBFloat16, 100, 768, 3072});
  check({DType::kFloat16, 200, 768, 2304, false, false, false});  // three parts, no operands
  check({DType::kFloat16, 512, 1024, 4096, true, false, true});
  const NormCase c{DType::kFloat16, 128, 768, 3072};
  const Operands o = operands(c);
  const Tensor ref = check(c);
  ASSERT_TRUE(ref.defined());
  expect_cuda_runs_match(norm_model(o, true), {{"A", o.a}, {"R", o.r}}, ref, 1e-6, "three runs of one context");
}

TEST(GpuProductNorm, SameBitsEveryRunOfOneContext) {
  INGOT_REQUIRE_GPU();
  const NormCase c{DType::kFloat16, 4096, 768, 768};
  const Operands o = operands(c);
  const std::map<std::string, Tensor> feeds{{"A", o.a}, {"R", o.r}};
  const Tensor ref = check(c);
  ASSERT_TRUE(ref.defined());
  expect_cuda_runs_match(norm_model(o, true), feeds, ref, 1e-6, "three runs of one context");
}

// Contexts of one engine on four threads at once, each running the fused kernel (a cooperative
// launch: the driver must keep each grid's CTAs resident together, or two grids' CTAs waiting
// for their row blocks would hold the SMs the others need): every run completes with the bits of
// a serial run.
TEST(GpuProductNorm, ConcurrentContextsMatchSerialRuns) {
  INGOT_REQUIRE_GPU();
  const NormCase c{DType::kFloat16, 4096, 768, 768};
  const Operands o = operands(c);
  const std::map<std::string, Tensor> feeds{{"A", o.a}, {"R", o.r}};
  EngineOptions eo;
  eo.device = "cuda";
  auto e = Engine::from_model(norm_model(o, true), eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto serial = (*e)->create_context()->run(feeds);
  ASSERT_TRUE(serial.has_value()) << serial.status().message();
  expect_concurrent_runs_match(**e, feeds, *serial);
}

}  // namespace
}  // namespace ingot::testing
