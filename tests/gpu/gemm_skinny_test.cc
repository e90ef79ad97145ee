// The skinny GEMM (src/backends/cuda/lt_gemm_skinny.h) called directly, against a float64
// reference on the same rounded inputs: every split count the launcher may pick (1..8, so the
// cluster reduction and its uneven row bands), row counts around its 128-row tile (1, 12, 127,
// 128, 130, 300), widths that leave a partial 64-column tile, K that leaves a partial 32-step
// or empty slices, every epilogue, with and without a bias, float16 and bfloat16.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "backends/cuda/lt_gemm_skinny.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

using cuda::SkinnyActivation;

// Device copy of a host tensor, freed with the object.
struct DeviceCopy {
  void* ptr = nullptr;
  explicit DeviceCopy(const Tensor& t) {
    EXPECT_EQ(cudaMalloc(&ptr, std::max<size_t>(t.nbytes(), 16)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, t.raw(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(ptr); }
};

double activation(double v, SkinnyActivation a) {
  switch (a) {
    case SkinnyActivation::kRelu: return v > 0 ? v : 0;
    case SkinnyActivation::kGeluTanh: return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    default: return v;
  }
}

void check(DType dt, int64_t m, int64_t n, int64_t k, int splits, SkinnyActivation act, bool with_bias) {
  const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                           " splits=" + std::to_string(splits) + " act=" + std::to_string(int(act)) +
                           (with_bias ? " bias " : " ") + dtype_name(dt);
  Tensor a = random_of(dt, {m, k}, uint32_t(m * 7 + k), -1, 1);
  Tensor w = random_of(dt, {k, n}, uint32_t(n * 11 + k), -1, 1);
  Tensor b = random_of(dt, {n}, uint32_t(n + 3), -1, 1);
  Tensor c(dt, {m, n});
  DeviceCopy da(a), dw(w), db(b), dc(c);
  cuda::SkinnyGemmArgs args;
  args.a = da.ptr, args.w = dw.ptr, args.bias = with_bias ? db.ptr : nullptr, args.c = dc.ptr;
  args.m = m, args.n = n, args.k = k, args.dtype = dt, args.activation = act, args.splits = splits;
  ASSERT_TRUE(cuda::skinny_gemm_supported(args)) << what;
  ASSERT_EQ(cuda::launch_skinny_gemm(args, nullptr), cudaSuccess) << what;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  ASSERT_EQ(cudaMemcpy(c.raw(), dc.ptr, c.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  int64_t bad = 0;
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = with_bias ? element(b, j) : 0.0, mag = std::fabs(ref);
      for (int64_t l = 0; l < k; ++l) {
        const double p = element(a, i * k + l) * element(w, l * n + j);
        ref += p, mag += std::fabs(p);
      }
      ref = activation(ref, act);
      const double got = element(c, i * n + j);
      // float32 accumulation plus one rounding to the 16-bit output
      const double tol = (dt == DType::kFloat16 ? 2e-3 : 1.6e-2) * (std::fabs(ref) + 1e-2) + 1e-5 * mag;
      if (!(std::fabs(got - ref) <= tol)) {
        if (bad++ == 0) ADD_FAILURE() << what << ": C[" << i << "," << j << "] = " << got << ", expected " << ref;
      }
      worst = std::max(worst, std::fabs(got - ref));
    }
  EXPECT_EQ(bad, 0) << what << " (worst abs error " << worst << ")";
}

TEST(GpuSkinnyGemm, EverySplitMatchesTheReference) {
  INGOT_REQUIRE_GPU();
  for (int splits = 1; splits <= 8; ++splits) check(DType::kFloat16, 128, 192, 768, splits, SkinnyActivation::kNone, true);
}

TEST(GpuSkinnyGemm, PartialTilesAndSlices) {
  INGOT_REQUIRE_GPU();
  for (int64_t m : {1, 12, 127, 128, 130, 300})
    for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {72, 40}, {200, 264}}) {
      check(DType::kFloat16, m, n, k, 1, SkinnyActivation::kNone, false);
      check(DType::kFloat16, m, n, k, 3, SkinnyActivation::kNone, true);  // k=8, 40: empty slices
    }
}

TEST(GpuSkinnyGemm, EpiloguesAndBfloat16) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (SkinnyActivation act : {SkinnyActivation::kNone, SkinnyActivation::kRelu, SkinnyActivation::kGeluTanh})
      for (bool bias : {false, true}) check(dt, 128, 3072 / 8, 768, 4, act, bias);
}

TEST(GpuSkinnyGemm, BertShapesWithTheLaunchersSplit) {
  INGOT_REQUIRE_GPU();
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}})
    check(DType::kFloat16, 128, n, k, cuda::skinny_gemm_splits(128, n, k, 132), SkinnyActivation::kGeluTanh, true);
}

TEST(GpuSkinnyGemm, RefusesUnalignedShapes) {
  cuda::SkinnyGemmArgs args;
  alignas(16) static uint16_t buf[64];
  args.a = args.w = args.c = buf;
  args.m = 4, args.n = 12, args.k = 8, args.dtype = DType::kFloat16;
  EXPECT_FALSE(cuda::skinny_gemm_supported(args));  // n not a multiple of 8
  args.n = 8, args.k = 4;
  EXPECT_FALSE(cuda::skinny_gemm_supported(args));  // k not a multiple of 8
  args.k = 8, args.dtype = DType::kFloat32;
  EXPECT_FALSE(cuda::skinny_gemm_supported(args));  // float32
  args.dtype = DType::kFloat16, args.c = buf + 1;
  EXPECT_FALSE(cuda::skinny_gemm_supported(args));  // misaligned C
  args.c = buf;
  EXPECT_TRUE(cuda::skinny_gemm_supported(args));
}

}  // namespace
}  // namespace ingot::testing
