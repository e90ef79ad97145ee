// FusedMatMul with a constant W whose rows are not 16-byte multiples (a 1001-token LM head):
// the product over the zero-padded width, in scratch blocks (scratch_blocks), equals the CPU's,
// with and without a bias, in float32 and float16. In float16 engines the output Cast is folded
// into the product (fuse_output_cast): half-precision products widened to float32 on the way out
// of scratch, padded or not, float16 and bfloat16, equal the CPU's.
#include "backends/cuda/gemm_impl.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

Model lm_head(const Tensor& a, const Tensor& w, const Tensor* b, const char* act) {
  Attributes attrs;
  attrs.set("activation", string_attr(act));
  std::vector<Tensor> ins = {a, w};
  if (b) ins.push_back(*b);
  Model m = single_node_model("FusedMatMul", ins, 1, attrs, 17, "ingot");
  for (size_t i = 1; i < ins.size(); ++i) m.graph.initializers[m.graph.inputs[i]] = ins[i];
  m.graph.inputs.resize(1);
  return m;
}

TEST(GpuGemmPadded, LmHeadWidthMatchesCpu) {
  INGOT_REQUIRE_GPU();
  Tensor a = random_tensor({3, 40, 64}, 7);
  Tensor w = random_tensor({64, 1001}, 8);
  Tensor b = random_tensor({1001}, 9);
  for (const char* act : {"", "Gelu"}) {
    for (const Tensor* bias : std::vector<const Tensor*>{&b, nullptr}) {
      Model m = lm_head(a, w, bias, act);
      const std::string what = std::string("LM head width 1001, act '") + act + "'" + (bias ? " with bias" : "");
      for (bool graph : {true, false}) expect_cuda_matches_cpu(m, {{"in0", a}}, 1e-4, 1e-4, what, graph);
      auto ref = run_model_on(m, {{"in0", a}}, "cpu", "fp16");
      auto got = run_model_on(m, {{"in0", a}}, "cuda", "fp16");
      ASSERT_EQ(ref.size(), got.size());
      for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], 2e-2, 1e-2, what + " fp16");
    }
  }
}

// Host-side: the scratch blocks take every row and as many columns as fit (W's slices read once),
// rows in steps only where 8 columns of every row do not fit.
TEST(GpuGemmPadded, ScratchBlocksTakeEveryRowWhereTheyFit) {
  constexpr int64_t kBudget = int64_t(32) << 20;
  auto blocks = [](int64_t m, int64_t width, int64_t es) {
    const cuda::ScratchBlocks b = cuda::scratch_blocks(m, width, es, kBudget);
    return std::pair<int64_t, int64_t>(b.rows, b.cols);
  };
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(blocks(4096, 50264, 2), P(4096, 4096));   // GPT-2's LM head at b32 s128
  EXPECT_EQ(blocks(128, 50264, 2), P(128, 50264));    // at b1: one block
  EXPECT_EQ(blocks(120, 1001, 2), P(120, 1008));      // the pitch rounds the width up to 8
  EXPECT_EQ(blocks(20000, 1008, 2), P(20000, 832));   // kBudget / 40000 bytes a column, down to 8
  EXPECT_EQ(blocks(3000000, 1008, 2), P(16644, 1008));  // 8 columns of every row exceed kBudget
  EXPECT_EQ(blocks(1, 1, 4), P(1, 8));
  EXPECT_EQ(blocks(int64_t(1) << 40, 1 << 20, 2), P(16, 1 << 20));
}

// Several column blocks (20000 rows of a 1001-wide product take 832 + 176 columns of 32 MiB):
// each block's slice of W and of the bias, its place in Y, widened or copied.
TEST(GpuGemmPadded, ColumnBlocksOfATallProductMatchCpu) {
  INGOT_REQUIRE_GPU();
  const DType dt = DType::kFloat16;
  Tensor a = random_of(dt, {20000, 64}, 41);
  Tensor w = random_of(dt, {64, 1001}, 42);
  Tensor b = random_of(dt, {1001}, 43);
  for (bool widen : {true, false}) {
    Model m = lm_head(a, w, &b, "");
    if (widen) {
      for (Node& node : m.graph.nodes) node.attrs.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
      m.graph.value(m.graph.outputs[0]).dtype = DType::kFloat32;
    }
    const std::string what = std::string("20000 x 1001 x 64 ") + (widen ? "widened to float32" : "float16");
    auto ref = run_model_on(m, {{"in0", a}}, "cpu", "fp32");
    auto got = run_model_on(m, {{"in0", a}}, "cuda", "fp32");
    ASSERT_EQ(ref.size(), 1u) << what;
    ASSERT_EQ(got.size(), 1u) << what;
    EXPECT_EQ(got[0].dtype(), widen ? DType::kFloat32 : dt) << what;
    expect_close(got[0], ref[0], 4e-3, 4e-3, what);
  }
}

// The FusedMatMul of a float16 engine writes the float32 graph output itself.
TEST(GpuGemmPadded, Fp16EngineFoldsTheOutputCast) {
  INGOT_REQUIRE_GPU();
  Tensor a = random_tensor({2, 5, 64}, 11);
  Tensor w = random_tensor({64, 1001}, 12);
  EngineOptions o;
  o.device = "cuda";
  o.precision = "fp16";
  auto e = Engine::from_model(lm_head(a, w, nullptr, ""), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  int widened = 0;
  for (const Node& n : (*e)->model().graph.nodes)
    widened += n.op_type == "FusedMatMul" && n.attrs.get_int("output_dtype", 0) == int64_t(DType::kFloat32);
  EXPECT_EQ(widened, 1);
}

// output_dtype = float32 on float16/bfloat16 inputs, widths padded (1001) and not (1000), with
// and without bias and GELU, against the CPU kernel on the same half-precision inputs.
TEST(GpuGemmPadded, WidenedHalfProductMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t n : {1001, 1000}) {
      for (const char* act : {"", "Gelu"}) {
        for (bool with_bias : {true, false}) {
          Tensor a = random_of(dt, {3, 7, 64}, 21);
          Tensor w = random_of(dt, {64, n}, 22);
          Tensor b = random_of(dt, {n}, 23);
          Model m = lm_head(a, w, with_bias ? &b : nullptr, act);
          for (Node& node : m.graph.nodes) node.attrs.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
          m.graph.value(m.graph.outputs[0]).dtype = DType::kFloat32;
          const std::string what = std::string(dtype_name(dt)) + " width " + std::to_string(n) + " act '" + act + "'" +
                                   (with_bias ? " with bias" : "");
          auto ref = run_model_on(m, {{"in0", a}}, "cpu", "fp32");
          auto got = run_model_on(m, {{"in0", a}}, "cuda", "fp32");
          ASSERT_EQ(ref.size(), 1u) << what;
          ASSERT_EQ(got.size(), 1u) << what;
          EXPECT_EQ(got[0].dtype(), DType::kFloat32) << what;
          // Both accumulate in float32 from the same half inputs; the GPU rounds the product to
          // the half dtype in scratch before widening it (half an ulp: 2^-11 or 2^-8 relative)
          // and its GELU epilogue is the tanh form (4.7e-4 from erf at most).
          const bool bf16 = dt == DType::kBFloat16;
          expect_close(got[0], ref[0], bf16 ? 4e-3 : 2e-3, bf16 ? 8e-3 : 2e-3, what);
        }
      }
    }
  }
}

// Widening where no padded copy exists: W (and the bias) fed at run time over an odd width, so
// the scratch rows are padded to 8 elements for the widening kernel; and K = 0 (act(bias) in
// every row).
TEST(GpuGemmPadded, WidenedProductOfRuntimeWeightsAndEmptyK) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t k : {64, 0}) {
      Tensor a = random_of(dt, {2, 9, k}, 31);
      Tensor w = random_of(dt, {k, 1001}, 32);
      Tensor b = random_of(dt, {1001}, 33);
      Attributes attrs;
      attrs.set("activation", string_attr("Relu"));
      attrs.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
      Model m = single_node_model("FusedMatMul", {a, w, b}, 1, attrs, 17, "ingot");
      m.graph.value(m.graph.outputs[0]).dtype = DType::kFloat32;
      const std::map<std::string, Tensor> feeds{{"in0", a}, {"in1", w}, {"in2", b}};
      const std::string what = std::string(dtype_name(dt)) + " K=" + std::to_string(k) + " runtime W";
      auto ref = run_model_on(m, feeds, "cpu", "fp32");
      auto got = run_model_on(m, feeds, "cuda", "fp32");
      ASSERT_EQ(ref.size(), 1u) << what;
      ASSERT_EQ(got.size(), 1u) << what;
      EXPECT_EQ(got[0].dtype(), DType::kFloat32) << what;
      const bool bf16 = dt == DType::kBFloat16;
      expect_close(got[0], ref[0], bf16 ? 4e-3 : 2e-3, bf16 ? 8e-3 : 2e-3, what);
    }
  }
}

}  // namespace
}  // namespace ingot::testing
