// FusedMatMul products at most 8 columns wide (classifier logits) run on their own kernel
// (gemm_skinny.cu): against the CPU kernel for widths 1, 2, 3 and 8 (and 9, the first width
// cuBLASLt takes), one row to more rows than a grid holds in one pass, K from 3 to 768, every
// activation, with and without a bias, constant or run-time weights, float32/float16/bfloat16
// inputs and outputs in the input dtype or widened to float32.
#include <algorithm>
#include <cmath>

#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

Model head(const std::vector<Tensor>& ins, const char* act, bool constant_w, bool float_out) {
  Attributes attrs;
  attrs.set("activation", string_attr(act));
  if (float_out) attrs.set("output_dtype", int_attr(int64_t(DType::kFloat32)));
  Model m = single_node_model("FusedMatMul", ins, 1, attrs, 17, "ingot");
  if (float_out) m.graph.value(m.graph.outputs[0]).dtype = DType::kFloat32;
  if (constant_w) {
    for (size_t i = 1; i < ins.size(); ++i) m.graph.initializers[m.graph.inputs[i]] = ins[i];
    m.graph.inputs.resize(1);
  }
  return m;
}

void check(DType dt, int64_t M, int64_t K, int64_t N, const char* act, bool bias, bool constant_w, bool float_out) {
  const std::string what = dtype_name(dt) + " M" + std::to_string(M) + " K" + std::to_string(K) + " N" +
                           std::to_string(N) + " act '" + act + "'" + (bias ? " bias" : "") +
                           (constant_w ? " const W" : " runtime W") + (float_out ? " -> float32" : "");
  std::vector<Tensor> ins = {random_of(dt, {M, K}, 41), random_of(dt, {K, N}, 42)};
  if (bias) ins.push_back(random_of(dt, {N}, 43));
  std::map<std::string, Tensor> feeds{{"in0", ins[0]}};
  if (!constant_w)
    for (size_t i = 1; i < ins.size(); ++i) feeds["in" + std::to_string(i)] = ins[i];
  Model m = head(ins, act, constant_w, float_out);
  auto ref = run_model_on(m, feeds, "cpu", "fp32");
  auto got = run_model_on(m, feeds, "cuda", "fp32");
  ASSERT_EQ(ref.size(), 1u) << what;
  ASSERT_EQ(got.size(), 1u) << what;
  ASSERT_EQ(got[0].dtype(), ref[0].dtype()) << what;
  // Both accumulate in float32 from the same inputs; float32 differs by summation order only.
  // Half outputs round once (half an ulp), and so does a cuBLASLt product on its way through
  // half scratch before widening; cuBLASLt's GELU is the tanh form (4.7e-4).
  const bool own_kernel = N <= 8;
  // cuBLASLt's half epilogue also rounds before adding the bias, so a value that cancels
  // against it keeps an error of the product's scale: its absolute tolerance is two half-ulps of
  // the largest output.
  const bool rounded = dt != DType::kFloat32 && (!float_out || !own_kernel);
  const double tol = dt == DType::kFloat32 ? 1e-4 : rounded ? (dt == DType::kBFloat16 ? 8e-3 : 2e-3) : 1e-3;
  double scale = 0;
  for (int64_t i = 0; i < ref[0].numel(); ++i) scale = std::max(scale, std::fabs(ref[0].scalar_as_double(i)));
  const double atol = rounded && !own_kernel ? std::max(tol, scale * (dt == DType::kBFloat16 ? 0x1p-7 : 0x1p-10)) : tol;
  expect_close(got[0], ref[0], atol, tol, what);
}

TEST(GpuGemmNarrow, WidthsShapesAndActivationsMatchCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (int64_t N : {1, 2, 3, 8, 9})
      for (const char* act : {"", "Relu", "Gelu", "GeluTanh"})
        check(dt, 37, 768, N, act, N != 3, N % 2 == 0, dt != DType::kFloat32 && N != 8);
}

TEST(GpuGemmNarrow, RowCountsAndDepths) {
  INGOT_REQUIRE_GPU();
  for (int64_t M : {1, 32, 70000})  // 70000 rows: past one grid of 65535 CTAs
    for (int64_t K : {3, 129})
      check(DType::kFloat16, M, K, 2, "", true, true, true);
  check(DType::kBFloat16, 5, 768, 2, "Relu", true, false, false);
}

}  // namespace
}  // namespace ingot::testing
