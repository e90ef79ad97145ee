// Products of at most 128 rows on ingot's own split-K kernel (backends/cuda/gemm_split_k.h),
// which lt_gemm takes in place of cuBLASLt for float16/bfloat16 with INGOT_CUDA_OWN_GEMM=1:
// which products it takes (host arithmetic, runs without a GPU), and FusedMatMul through it
// against the CPU kernel and against cuBLASLt (the variable unset) for BERT's four batch-1
// shapes and odd ones: every K split, fewer rows than a tile, bias, residual, ReLU and GELU, run
// after run the same bits.
#include <cstdlib>
#include <optional>

#include "backends/cuda/gemm_split_k.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

using cuda::SplitKProduct;
using cuda::split_k_plan;

alignas(16) char arena[1 << 12];

SplitKProduct product(int64_t rows, int64_t cols, int64_t depth) {
  SplitKProduct p;
  p.a = p.w = p.d = arena;
  p.lda = depth, p.ldw = cols, p.ldd = cols;
  p.rows = rows, p.cols = cols, p.depth = depth;
  return p;
}

TEST(SplitKPlan, BatchOneProductsTakeTheMostSplitsThatFillTheGpuOnce) {
  EXPECT_EQ(split_k_plan(product(128, 2304, 768), 132), 3);  // QKV: 36 column tiles
  EXPECT_EQ(split_k_plan(product(128, 768, 768), 132), 4);   // out-projection
  EXPECT_EQ(split_k_plan(product(128, 3072, 768), 132), 2);  // FFN 1
  EXPECT_EQ(split_k_plan(product(128, 768, 1536), 132), 4);  // 384-deep slices
  EXPECT_EQ(split_k_plan(product(1, 64, 16), 132), 1);
}

TEST(SplitKPlan, ProductsItCannotTakeStayWithCublasLt) {
  EXPECT_EQ(split_k_plan(product(129, 768, 768), 132), 0);   // more than one tile of rows
  EXPECT_EQ(split_k_plan(product(128, 96, 768), 132), 0);    // columns not a multiple of 64
  EXPECT_EQ(split_k_plan(product(128, 768, 24), 132), 0);    // depth not a multiple of 16
  EXPECT_EQ(split_k_plan(product(128, 768, 3072), 132), 0);  // FFN 2: slices deeper than 384
  EXPECT_EQ(split_k_plan(product(128, 64 * 200, 768), 132), 0);  // 200 tiles of two slices
  SplitKProduct p = product(128, 768, 768);
  p.dtype = DType::kFloat32;
  EXPECT_EQ(split_k_plan(p, 132), 0);
  p = product(128, 768, 768);
  p.beta = 0.5f;
  EXPECT_EQ(split_k_plan(p, 132), 0);
  p = product(128, 768, 768);
  p.a = arena + 8;  // rows of A not 16-byte aligned
  EXPECT_EQ(split_k_plan(p, 132), 0);
  p = product(128, 768, 768);
  p.lda = 772;
  EXPECT_EQ(split_k_plan(p, 132), 0);
}

Model fused(const std::vector<Tensor>& ins, const char* act) {
  Attributes attrs;
  attrs.set("activation", string_attr(act));
  Model m = single_node_model("FusedMatMul", ins, 1, attrs, 17, "ingot");
  // W and the bias are constants, as in an engine; A and the residual are fed.
  m.graph.initializers[m.graph.inputs[1]] = ins[1];
  if (ins.size() > 2 && ins[2].defined()) m.graph.initializers[m.graph.inputs[2]] = ins[2];
  return m;
}

// One FusedMatMul of M x K by K x N on the GPU (own kernel and dependent launch, or cuBLASLt)
// against the CPU.
std::vector<Tensor> check(DType dt, int64_t M, int64_t K, int64_t N, const char* act, bool residual, bool own) {
  const std::string what = dtype_name(dt) + " M" + std::to_string(M) + " K" + std::to_string(K) + " N" +
                           std::to_string(N) + " act '" + act + "'" + (residual ? " residual" : "") +
                           (own ? " own kernel" : " cuBLASLt");
  std::vector<Tensor> ins = {random_of(dt, {M, K}, 51), random_of(dt, {K, N}, 52, -0.1, 0.1),
                             random_of(dt, {N}, 53)};
  std::map<std::string, Tensor> feeds{{"in0", ins[0]}};
  if (residual) {
    ins.push_back(random_of(dt, {M, N}, 54));
    feeds["in3"] = ins[3];
  }
  Model m = fused(ins, residual ? "" : act);
  if (residual) {  // the fed residual stays a graph input
    m.graph.inputs = {m.graph.inputs[0], m.graph.inputs[3]};
  } else {
    m.graph.inputs.resize(1);
  }
  std::vector<Tensor> got;
  {
    std::optional<ScopedEnv> own_gemm, pdl;
    if (own) own_gemm.emplace("INGOT_CUDA_OWN_GEMM", "1"), pdl.emplace("INGOT_CUDA_PDL", "1");
    got = run_model_on(m, feeds, "cuda", "fp32");
  }
  auto ref = run_model_on(m, feeds, "cpu", "fp32");
  EXPECT_EQ(got.size(), 1u) << what;
  EXPECT_EQ(ref.size(), 1u) << what;
  if (got.size() != 1 || ref.size() != 1) return {};
  // fp32 sums in another order, one rounding to the output dtype, GELU's tanh form (4.7e-4).
  const double tol = dt == DType::kBFloat16 ? 1.6e-2 : 3e-3;
  expect_close(got[0], ref[0], tol, tol, what);
  return got;
}

TEST(GpuSplitKProduct, BertBatchOneShapesMatchCpuAndCublasLt) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    check(dt, 128, 768, 2304, "", false, true);
    check(dt, 128, 768, 768, "", true, true);
    check(dt, 128, 768, 3072, "GeluTanh", false, true);
    check(dt, 128, 1536, 768, "", true, true);
    check(dt, 128, 1536, 768, "", true, false);  // the same through cuBLASLt
  }
}

TEST(GpuSplitKProduct, FewRowsOddDepthsAndActivations) {
  INGOT_REQUIRE_GPU();
  check(DType::kFloat16, 1, 16, 64, "Relu", false, true);
  check(DType::kFloat16, 37, 96, 128, "Gelu", false, true);      // S 3: slices of 32, a partial box
  check(DType::kFloat16, 100, 336, 192, "", true, true);         // S 3: slices of 112
  check(DType::kBFloat16, 65, 1536, 640, "Relu", false, true);   // S 4: slices of 384
}

TEST(GpuSplitKProduct, SameBitsEveryRun) {
  INGOT_REQUIRE_GPU();
  auto a = check(DType::kFloat16, 128, 1536, 768, "", true, true);
  auto b = check(DType::kFloat16, 128, 1536, 768, "", true, true);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  expect_close(a[0], b[0], 0, 0, "two runs");
}

}  // namespace
}  // namespace ingot::testing
