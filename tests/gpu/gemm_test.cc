// MatMul, Gemm and ingot.FusedMatMul on CUDA (cuBLASLt) against the CPU reference.
//
// float32 runs without TF32 (the engine's default), so it is compared tightly. float16 and
// bfloat16 models are compared with the CPU's float32 result on the same rounded inputs.
// Constant weights are graph initializers, so the executor's upload/prepare path is tested.
// Note the optimizer: a MatMul or Gemm with a constant float32 2-D weight becomes an
// ingot.FusedMatMul, so the MatMul/Gemm cases feed their weights unless the rewrite cannot
// apply (3-D B, transA, alpha != 1, half-precision weights).
#include <algorithm>
#include <cmath>
#include <set>

#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Case {
  Model model;
  std::map<std::string, Tensor> feeds;
};

// A one-node model; inputs whose index is in `constants` become initializers, the rest feeds.
Case make_case(const std::string& op, const std::vector<Tensor>& inputs, const std::set<int>& constants,
               Attributes attrs = {}, const std::string& domain = "") {
  Case c;
  c.model = single_node_model(op, inputs, 1, std::move(attrs), 17, domain);
  Graph& g = c.model.graph;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (constants.count(int(i))) {
      ValueId id = g.intern(name);
      g.inputs.erase(std::find(g.inputs.begin(), g.inputs.end(), id));
      g.initializers[id] = inputs[i];
    } else {
      c.feeds[name] = inputs[i];
    }
  }
  return c;
}

// A float32 tensor's values rounded to `dt` (stored as dt).
Tensor rounded_to(const Tensor& f32, DType dt) {
  Tensor t(dt, f32.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = f32.data<float>()[i];
    if (dt == DType::kFloat16) t.data<float16>()[i] = float16(v);
    else if (dt == DType::kBFloat16) t.data<bfloat16>()[i] = bfloat16(v);
    else t.data<float>()[i] = v;
  }
  return t;
}

Tensor as_f32(const Tensor& t) {
  Tensor f(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = float(element(t, i));
  return f;
}

std::vector<Tensor> randoms(const std::vector<Shape>& shapes, uint32_t seed) {
  std::vector<Tensor> r;
  for (const Shape& s : shapes) r.push_back(random_tensor(s, seed++));
  return r;
}

// float32: CUDA against the CPU, |err| <= 1e-4 + 1e-4·|ref|, with and without a CUDA graph.
void expect_fp32(const std::string& op, const std::vector<Tensor>& inputs, const std::set<int>& constants,
                 Attributes attrs, const std::string& what, const std::string& domain = "") {
  Case c = make_case(op, inputs, constants, attrs, domain);
  expect_cuda_matches_cpu(c.model, c.feeds, 1e-4, 1e-4, what + " (graph)", true);
  expect_cuda_matches_cpu(c.model, c.feeds, 1e-4, 1e-4, what + " (eager)", false);
}

// float16/bfloat16: the model in `dt` on CUDA against the CPU's float32 model on the same
// rounded values; tolerance 1e-2 relative, 1e-2 absolute scaled by the output's RMS.
void expect_half(DType dt, const std::string& op, const std::vector<Tensor>& inputs, const std::set<int>& constants,
                 Attributes attrs, const std::string& what, const std::string& domain = "") {
  std::vector<Tensor> half, ref_in;
  for (const Tensor& t : inputs) {
    half.push_back(rounded_to(t, dt));
    ref_in.push_back(as_f32(half.back()));
  }
  Case ref_case = make_case(op, ref_in, constants, attrs, domain);
  Case got_case = make_case(op, half, constants, attrs, domain);
  auto ref = run_model_on(ref_case.model, ref_case.feeds, "cpu");
  auto got = run_model_on(got_case.model, got_case.feeds, "cuda");
  ASSERT_EQ(ref.size(), 1u) << what;
  ASSERT_EQ(got.size(), 1u) << what;
  ASSERT_EQ(got[0].dtype(), dt) << what;
  double sq = 0;
  for (int64_t i = 0; i < ref[0].numel(); ++i) sq += double(ref[0].data<float>()[i]) * ref[0].data<float>()[i];
  const double rms = ref[0].numel() ? std::sqrt(sq / double(ref[0].numel())) : 0;
  expect_close(as_f32(got[0]), ref[0], 1e-2 * std::max(1.0, rms), 1e-2, what + " " + dtype_name(dt));
}

Attributes gemm_attrs(int trans_a, int trans_b, float alpha, float beta) {
  Attributes a;
  a.set("transA", int_attr(trans_a));
  a.set("transB", int_attr(trans_b));
  a.set("alpha", float_attr(alpha));
  a.set("beta", float_attr(beta));
  return a;
}

Attributes fused_attrs(const std::string& activation) {
  Attributes a;
  a.set("activation", string_attr(activation));
  a.set("precision", string_attr("fp32"));
  return a;
}

const char* const kActivations[] = {"", "Relu", "Gelu", "GeluTanh"};

TEST(GpuGemm, MatMul2D) {
  INGOT_REQUIRE_GPU();
  expect_fp32("MatMul", randoms({{37, 29}, {29, 53}}, 1), {}, {}, "37x29 * 29x53");
  expect_fp32("MatMul", randoms({{64, 64}, {64, 64}}, 3), {}, {}, "64x64 * 64x64");
  expect_fp32("MatMul", randoms({{1, 7}, {7, 1}}, 5), {}, {}, "1x7 * 7x1");
  expect_fp32("MatMul", randoms({{128, 768}, {768, 96}}, 7), {}, {}, "128x768 * 768x96");
}

TEST(GpuGemm, MatMulBatched) {
  INGOT_REQUIRE_GPU();
  expect_fp32("MatMul", randoms({{3, 37, 29}, {3, 29, 53}}, 11), {}, {}, "3x37x29 * 3x29x53");
  expect_fp32("MatMul", randoms({{2, 3, 17, 8}, {2, 3, 8, 19}}, 13), {}, {}, "2x3x17x8 * 2x3x8x19");
  // B 3-D does not fuse, so its initializer path is MatMul's own.
  expect_fp32("MatMul", randoms({{4, 9, 31}, {4, 31, 6}}, 15), {1}, {}, "4x9x31 * const 4x31x6");
}

TEST(GpuGemm, MatMulBroadcastBatch) {
  INGOT_REQUIRE_GPU();
  expect_fp32("MatMul", randoms({{2, 5, 37, 29}, {29, 53}}, 21), {}, {}, "A batch folds into M");
  expect_fp32("MatMul", randoms({{7, 29}, {2, 3, 29, 11}}, 23), {}, {}, "A broadcast over B's batch");
  expect_fp32("MatMul", randoms({{2, 1, 7, 29}, {1, 3, 29, 11}}, 25), {}, {}, "both broadcast (host loop)");
  expect_fp32("MatMul", randoms({{3, 7, 29}, {2, 1, 29, 11}}, 27), {}, {}, "fold + strided batch");
  expect_fp32("MatMul", randoms({{2, 3, 7, 29}, {2, 1, 29, 11}}, 29), {}, {}, "partial fold");
  expect_fp32("MatMul", randoms({{2, 1, 3, 5, 9}, {1, 4, 3, 9, 6}}, 31), {}, {}, "5-D mixed broadcast");
}

TEST(GpuGemm, MatMulOneD) {
  INGOT_REQUIRE_GPU();
  expect_fp32("MatMul", randoms({{29}, {29, 53}}, 41), {}, {}, "[29] * 29x53");
  expect_fp32("MatMul", randoms({{37, 29}, {29}}, 43), {}, {}, "37x29 * [29]");
  expect_fp32("MatMul", randoms({{29}, {29}}, 45), {}, {}, "[29] * [29]");
  expect_fp32("MatMul", randoms({{29}, {2, 29, 5}}, 47), {}, {}, "[29] * 2x29x5");
  expect_fp32("MatMul", randoms({{2, 3, 29}, {29}}, 49), {}, {}, "2x3x29 * [29]");
}

TEST(GpuGemm, MatMulFloat64FallsBackToCpu) {
  INGOT_REQUIRE_GPU();
  // supports() refuses float64: the node runs on the CPU and the result must still be right.
  std::vector<Tensor> in;
  for (const Shape& s : std::vector<Shape>{{5, 7}, {7, 3}}) {
    Tensor f = random_tensor(s, uint32_t(s[0]));
    Tensor d(DType::kFloat64, s);
    for (int64_t i = 0; i < d.numel(); ++i) d.data<double>()[i] = f.data<float>()[i];
    in.push_back(d);
  }
  Case c = make_case("MatMul", in, {});
  expect_cuda_matches_cpu(c.model, c.feeds, 1e-12, 1e-12, "float64 MatMul");
}

TEST(GpuGemm, GemmTransposes) {
  INGOT_REQUIRE_GPU();
  const int64_t M = 37, N = 53, K = 29;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      Shape a = ta ? Shape{K, M} : Shape{M, K};
      Shape b = tb ? Shape{N, K} : Shape{K, N};
      std::string what = "Gemm transA=" + std::to_string(ta) + " transB=" + std::to_string(tb);
      expect_fp32("Gemm", randoms({a, b, {M, N}}, uint32_t(51 + 2 * ta + tb)), {}, gemm_attrs(ta, tb, 0.5f, 2.f),
                  what + " alpha 0.5 beta 2");
      expect_fp32("Gemm", randoms({a, b}, uint32_t(61 + 2 * ta + tb)), {}, gemm_attrs(ta, tb, 1.f, 1.f),
                  what + " no C");
    }
  }
}

TEST(GpuGemm, GemmCShapes) {
  INGOT_REQUIRE_GPU();
  const int64_t M = 37, N = 53, K = 29;
  const std::vector<std::pair<Shape, std::string>> c_shapes = {
      {{N}, "[N]"}, {{1, N}, "[1,N]"}, {{M, N}, "[M,N]"}, {{M, 1}, "[M,1]"}, {{}, "scalar"}, {{1}, "[1]"}};
  uint32_t seed = 71;
  for (const auto& [cs, name] : c_shapes) {
    for (float beta : {1.f, 0.5f, 0.f}) {
      expect_fp32("Gemm", randoms({{M, K}, {K, N}, cs}, seed), {}, gemm_attrs(0, 0, 1.f, beta),
                  "Gemm C " + name + " beta " + std::to_string(beta));
      seed += 3;
    }
  }
  expect_fp32("Gemm", randoms({{M, K}, {N, K}, {N}}, 97), {}, gemm_attrs(0, 1, 1.5f, 1.f), "Gemm alpha 1.5 bias C");
}

TEST(GpuGemm, GemmConstantWeights) {
  INGOT_REQUIRE_GPU();
  // transA keeps the Gemm a Gemm (the linear fusion needs transA = 0).
  expect_fp32("Gemm", randoms({{29, 37}, {53, 29}, {53}}, 101), {1, 2}, gemm_attrs(1, 1, 1.f, 1.f),
              "Gemm transA const B, C");
  // alpha = beta = 1, transA = 0 with a constant B: the optimizer makes it a FusedMatMul.
  expect_fp32("Gemm", randoms({{37, 29}, {53, 29}, {53}}, 103), {1, 2}, gemm_attrs(0, 1, 1.f, 1.f),
              "Gemm const B, C (fused)");
}

TEST(GpuGemm, FusedMatMulActivations) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 111;
  for (const char* act : kActivations) {
    for (bool bias : {false, true}) {
      std::vector<Shape> shapes = {{2, 5, 37}, {37, 53}};
      if (bias) shapes.push_back({53});
      std::set<int> constants = bias ? std::set<int>{1, 2} : std::set<int>{1};
      std::string what = std::string("FusedMatMul '") + act + "'" + (bias ? " + bias" : "");
      expect_fp32("FusedMatMul", randoms(shapes, seed), constants, fused_attrs(act), what, "ingot");
      expect_fp32("FusedMatMul", randoms({{29}, {29, 17}}, seed + 7), {1}, fused_attrs(act), what + ", A 1-D",
                  "ingot");
      seed += 13;
    }
  }
}

TEST(GpuGemm, FusedMatMulBertSizeExactGelu) {
  INGOT_REQUIRE_GPU();
  // BERT's intermediate layer: exact GELU must match the float32 reference at 1e-4.
  std::vector<Tensor> in = randoms({{1, 128, 768}, {768, 3072}, {3072}}, 131);
  for (int64_t i = 0; i < in[1].numel(); ++i) in[1].data<float>()[i] *= 0.1f;  // pre-activations of order 1
  expect_fp32("FusedMatMul", in, {1, 2}, fused_attrs("Gelu"), "BERT FFN 128x768x3072 Gelu", "ingot");
}

TEST(GpuGemm, HalfMatMul) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    expect_half(dt, "MatMul", randoms({{37, 29}, {29, 53}}, 141), {}, {}, "MatMul 37x29x53");
    expect_half(dt, "MatMul", randoms({{2, 5, 37, 29}, {29, 53}}, 143), {1}, {}, "MatMul folded, const B");
    expect_half(dt, "MatMul", randoms({{2, 1, 7, 32}, {1, 3, 32, 16}}, 145), {}, {}, "MatMul broadcast");
    expect_half(dt, "MatMul", randoms({{12, 128, 64}, {12, 64, 128}}, 147), {}, {}, "MatMul attention scores");
    expect_half(dt, "MatMul", randoms({{29}, {29, 53}}, 149), {}, {}, "MatMul 1-D A");
  }
}

TEST(GpuGemm, HalfGemm) {
  INGOT_REQUIRE_GPU();
  const int64_t M = 37, N = 53, K = 29;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    expect_half(dt, "Gemm", randoms({{K, M}, {N, K}, {M, N}}, 151), {1}, gemm_attrs(1, 1, 0.5f, 2.f),
                "Gemm transA transB C [M,N]");
    expect_half(dt, "Gemm", randoms({{M, K}, {K, N}, {N}}, 153), {1, 2}, gemm_attrs(0, 0, 1.f, 1.f),
                "Gemm bias C, const B");
    expect_half(dt, "Gemm", randoms({{M, K}, {K, N}, {}}, 155), {}, gemm_attrs(0, 0, 1.f, 0.25f), "Gemm scalar C");
  }
}

TEST(GpuGemm, HalfFusedMatMul) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 161;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (const char* act : kActivations) {
      std::string what = std::string("FusedMatMul '") + act + "'";
      expect_half(dt, "FusedMatMul", randoms({{2, 5, 37}, {37, 53}, {53}}, seed), {1, 2}, fused_attrs(act),
                  what + " + bias", "ingot");
      expect_half(dt, "FusedMatMul", randoms({{3, 64}, {64, 40}}, seed + 1), {1}, fused_attrs(act), what, "ingot");
      seed += 5;
    }
    std::vector<Tensor> bert = randoms({{1, 128, 768}, {768, 3072}, {3072}}, 171);
    for (int64_t i = 0; i < bert[1].numel(); ++i) bert[1].data<float>()[i] *= 0.1f;
    expect_half(dt, "FusedMatMul", bert, {1, 2}, fused_attrs("Gelu"), "BERT FFN Gelu", "ingot");
  }
}

TEST(GpuGemm, FusedMatMulResidual) {
  INGOT_REQUIRE_GPU();
  // fold_residual_into_product's input 3: cuBLASLt's C with beta = 1, read from another buffer
  // than the output (also while the first run times the candidates); constant or run-time
  // weights. 50 halves a row (100 bytes) has no epilogue path: that node runs on the CPU.
  expect_fp32("FusedMatMul", randoms({{2, 5, 64}, {64, 96}, {96}, {2, 5, 96}}, 181), {1, 2}, fused_attrs(""),
              "FusedMatMul + residual", "ingot");
  expect_fp32("FusedMatMul", randoms({{7, 64}, {64, 96}, {96}, {7, 96}}, 183), {}, fused_attrs(""),
              "FusedMatMul + residual, run-time W", "ingot");
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    expect_half(dt, "FusedMatMul", randoms({{4, 128, 768}, {768, 768}, {768}, {4, 128, 768}}, 185), {1, 2},
                fused_attrs(""), "FusedMatMul + residual, BERT's out-projection", "ingot");
    expect_half(dt, "FusedMatMul", randoms({{3, 64}, {64, 50}, {50}, {3, 50}}, 187), {1, 2}, fused_attrs(""),
                "FusedMatMul + residual, 100-byte rows (CPU)", "ingot");
  }
}

}  // namespace
}  // namespace ingot::testing
