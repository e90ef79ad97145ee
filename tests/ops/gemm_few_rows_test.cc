// gemm_few_rows (the CPU product of a few rows on packed float32 weights; gemm_few_rows_bf16 on
// AMX or AVX512-BF16 for bf16 weights; gemm_few_rows_w16 on bf16 weights in float32 arithmetic) against a naive
// double-precision reference and against oneDNN's matmul reading the same packed weights, on
// random inputs: every row count up to kFewRowsMax (one, two and three row blocks), panels cut
// short (N not a multiple of 32), K not a multiple of 16, with and without bias, every
// activation; and gemm_panel16, which takes every M on CPUs with AVX2 and no AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/gemm_few_rows.h"
#include "op_test_util.h"

namespace ingot::testing {
namespace {

using fused_matmul::Activation;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

double activate(double x, Activation act) {
  switch (act) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0 ? x : 0;
    case Activation::kGelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Activation::kGeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

std::vector<float> reference(const float* a, const float* w, const float* bias, int64_t M, int64_t K, int64_t N,
                             Activation act) {
  std::vector<float> y(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? bias[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(a[m * K + k]) * w[k * N + n];
      y[size_t(m * N + n)] = float(activate(s, act));
    }
  return y;
}

// oneDNN's matmul on the same packed weights (the path FusedMatMul takes above kFewRowsMax);
// bf16: A converted by oneDNN.
std::vector<float> onednn(const float* a, const dnnl::memory& packed, const float* bias, int64_t M, int64_t K,
                          int64_t N, Activation act, bool bf16 = false) {
  fused_matmul::Spec s;
  s.K = K, s.N = N, s.bias = bias != nullptr, s.act = act, s.bf16 = bf16;
  auto pd = fused_matmul::make_pd(s, M, packed.get_desc());
  auto& eng = dnnl_util::cpu_engine();
  std::vector<float> y(size_t(M * N));
  dnnl::memory src(pd.src_desc(), eng);
  dnnl::memory plain({{M, K}, dt::f32, tag::ab}, eng, const_cast<float*>(a));
  {
    dnnl::stream st(eng);
    dnnl::reorder(plain, src).execute(st, plain, src);
    st.wait();
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, src},
      {DNNL_ARG_WEIGHTS, packed},
      {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng, y.data())},
      {DNNL_ARG_SCRATCHPAD, dnnl_util::scratchpad(pd.scratchpad_desc())}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(pd.bias_desc(), eng, const_cast<float*>(bias)));
  dnnl::stream st(eng);
  dnnl::matmul(pd).execute(st, args);
  st.wait();
  return y;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

// The kernel's output for M rows, run as FusedMatMul and the attention projections run it
// (gemm_packed), with guard values past it: it must write exactly M x N floats.
std::vector<float> run_kernel(const dnnl::memory& packed, const Tensor& A, int64_t M, int64_t N, const float* bias,
                              Activation act) {
  std::vector<float> y(size_t(M * N + 16), 1234.5f);
  cpu::gemm_packed(packed, A.data<float>(), M, bias, act, y.data());
  for (size_t i = size_t(M * N); i < y.size(); ++i) EXPECT_EQ(y[i], 1234.5f) << "wrote past the output";
  y.resize(size_t(M * N));
  return y;
}

std::string describe(int64_t K, int64_t N, int64_t M, Activation act, bool bias) {
  return "K=" + std::to_string(K) + " N=" + std::to_string(N) + " M=" + std::to_string(M) +
         " act=" + std::to_string(int(act)) + " bias=" + std::to_string(bias);
}

// gemm_panel16 (every M on 16-column panels; taken on CPUs with AVX2 and no AVX-512, called
// directly where AVX-512F takes the other kernels, so those CPUs test it too) against the
// reference: row counts around its 6-row blocks up to several hundred, panels cut short (N not a
// multiple of 16), K not a multiple of 16 and longer than its 768-step blocks, K = 0, with and
// without bias, every activation.
TEST(GemmPanel16, MatchesReferenceForEveryRowCount) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  struct Shape2 { int64_t K, N; };
  const std::vector<Shape2> shapes = {{1, 1}, {5, 2}, {16, 16}, {17, 33}, {33, 100}, {0, 20}, {769, 48}, {1600, 17}};
  const std::vector<int64_t> rows = {1, 2, 5, 6, 7, 12, 13, 31, 130};
  uint32_t seed = 500;
  for (const auto& sh : shapes) {
    Tensor W = random_tensor({sh.K, sh.N}, seed++);
    Tensor bias = random_tensor({sh.N}, seed++);
    const dnnl::memory packed =
        fused_matmul::pack_weights(W.data<float>(), sh.K, sh.N, fused_matmul::panel16_layout(sh.K, sh.N));
    for (int64_t M : rows)
      for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGelu, Activation::kGeluTanh})
        for (bool with_bias : {false, true}) {
          Tensor A = random_tensor({M, std::max<int64_t>(sh.K, 1)}, seed++);
          const float* b = with_bias ? bias.data<float>() : nullptr;
          const std::string where = describe(sh.K, sh.N, M, act, with_bias);
          const double tol = 1e-5 * std::sqrt(double(sh.K)) + 2e-6;
          const std::vector<float> ref = reference(A.data<float>(), W.data<float>(), b, M, sh.K, sh.N, act);
          std::vector<float> y(size_t(M * sh.N + 16), 1234.5f);
          cpu::gemm_panel16(A.data<float>(), M, sh.K, sh.N, static_cast<const float*>(packed.get_data_handle()), b,
                            act, y.data());
          for (size_t i = size_t(M * sh.N); i < y.size(); ++i) EXPECT_EQ(y[i], 1234.5f) << "wrote past the output";
          y.resize(size_t(M * sh.N));
          EXPECT_LE(max_diff(y, ref), tol) << where;
          ASSERT_EQ(cpu::packed_kernel_reads(packed.get_desc(), M), cpu::panel16_supported()) << where;
          if (cpu::panel16_supported()) EXPECT_LE(max_diff(run_kernel(packed, A, M, sh.N, b, act), ref), tol) << where;
        }
  }
}

// On those CPUs constant float32 weights are packed for it (fused_matmul::constant_weights_layout).
TEST(GemmPanel16, ConstantWeightsArePackedForIt) {
  if (!cpu::panel16_supported()) GTEST_SKIP() << "this CPU has AVX-512F or lacks AVX2/FMA";
  fused_matmul::Spec s;
  s.K = 768, s.N = 3072;
  EXPECT_EQ(fused_matmul::constant_weights_layout(s, fused_matmul::kRepresentativeM),
            fused_matmul::panel16_layout(s.K, s.N));
}

TEST(GemmFewRows, MatchesReferenceAndOneDnnOnPackedWeights) {
  if (!cpu::few_rows_supported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  struct Shape2 { int64_t K, N; };
  const std::vector<Shape2> shapes = {{1, 1}, {5, 2}, {16, 32}, {17, 33}, {33, 100}, {768, 64}, {300, 70}};
  const std::vector<int64_t> rows = {1, 2, 5, 6, 7, 12, 13, 24, 25, 31, 32};
  uint32_t seed = 100;
  for (const auto& sh : shapes) {
    Tensor W = random_tensor({sh.K, sh.N}, seed++);
    Tensor bias = random_tensor({sh.N}, seed++);
    const dnnl::memory packed =
        fused_matmul::pack_weights(W.data<float>(), sh.K, sh.N, fused_matmul::panel_layout(sh.K, sh.N));
    for (int64_t M : rows)
      for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGelu, Activation::kGeluTanh})
        for (bool with_bias : {false, true}) {
          Tensor A = random_tensor({M, sh.K}, seed++);
          const float* b = with_bias ? bias.data<float>() : nullptr;
          ASSERT_TRUE(cpu::packed_kernel_reads(packed.get_desc(), M));
          const std::vector<float> y = run_kernel(packed, A, M, sh.N, b, act);
          const std::string where = describe(sh.K, sh.N, M, act, with_bias);
          const double tol = 1e-5 * std::sqrt(double(sh.K)) + 2e-6;
          EXPECT_LE(max_diff(y, reference(A.data<float>(), W.data<float>(), b, M, sh.K, sh.N, act)), tol) << where;
          EXPECT_LE(max_diff(y, onednn(A.data<float>(), packed, b, M, sh.K, sh.N, act)), tol) << where;
        }
  }
}

// Both bf16 kernels where this CPU has them: the one FusedMatMul picks (AMX if usable) through
// gemm_packed, and the AVX512-BF16 one called directly (so an AMX CPU tests it too).
TEST(GemmFewRows, Bf16MatchesOneDnnAndReference) {
  if (!cpu::few_rows_bf16_supported()) GTEST_SKIP() << "this CPU has neither AMX-BF16 nor AVX512-BF16";
  struct Shape2 { int64_t K, N; };
  const std::vector<Shape2> shapes = {{1, 1}, {5, 2}, {32, 64}, {33, 65}, {100, 130}, {768, 64}, {1000, 200}};
  uint32_t seed = 300;
  for (const auto& sh : shapes) {
    Tensor W = random_tensor({sh.K, sh.N}, seed++);
    Tensor bias = random_tensor({sh.N}, seed++);
    const dnnl::memory packed =
        fused_matmul::pack_weights(W.data<float>(), sh.K, sh.N, fused_matmul::bf16_panel_layout(sh.K, sh.N));
    for (int64_t M = 1; M <= cpu::kFewRowsMaxBf16; M += M < 7 ? 1 : 5)
      for (Activation act : {Activation::kNone, Activation::kGelu, Activation::kGeluTanh, Activation::kRelu})
        for (bool with_bias : {false, true}) {
          Tensor A = random_tensor({M, sh.K}, seed++);
          const float* b = with_bias ? bias.data<float>() : nullptr;
          ASSERT_TRUE(cpu::packed_kernel_reads(packed.get_desc(), M));
          std::vector<std::pair<std::string, std::vector<float>>> outputs{
              {"picked", run_kernel(packed, A, M, sh.N, b, act)}};
          if (cpu::few_rows_bf16_on_avx512()) {
            std::vector<float> y(size_t(M * sh.N));
            cpu::gemm_few_rows_bf16_avx512(A.data<float>(), M, sh.K, sh.N,
                                           static_cast<const uint16_t*>(packed.get_data_handle()), b, act, y.data());
            outputs.emplace_back("avx512-bf16", std::move(y));
          }
          const std::vector<float> dnn = onednn(A.data<float>(), packed, b, M, sh.K, sh.N, act, true);
          const std::vector<float> ref = reference(A.data<float>(), W.data<float>(), b, M, sh.K, sh.N, act);
          for (const auto& [kernel, y] : outputs) {
            const std::string where = kernel + " " + describe(sh.K, sh.N, M, act, with_bias);
            // Same bf16 products and float32 sums as oneDNN's matmul (in another order on
            // AVX512-BF16); the epilogue's GELU differs from oneDNN's within float rounding.
            EXPECT_LE(max_diff(y, dnn), 1e-4 * std::sqrt(double(sh.K))) << where;
            // bf16 keeps 8 bits of mantissa: errors grow like sqrt(K) * 2^-8.
            EXPECT_LE(max_diff(y, ref), 0.02 * std::sqrt(double(sh.K))) << where;
          }
        }
  }
}

// gemm_few_rows_w16 (bf16 weights widened as they are read, float32 arithmetic): exactly what
// gemm_few_rows computes on the same weights rounded to bf16 and kept in float32 (the widening
// is exact and the FMAs run in the same order), and within bf16's rounding of the float32
// reference.
TEST(GemmFewRows, Bf16WeightsWidenedMatchFloat32OnRoundedWeights) {
  if (!cpu::few_rows_supported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  struct Shape2 { int64_t K, N; };
  const std::vector<Shape2> shapes = {{1, 1}, {5, 2}, {16, 32}, {17, 33}, {33, 100}, {768, 64}, {300, 70}};
  uint32_t seed = 700;
  for (const auto& sh : shapes) {
    Tensor W = random_tensor({sh.K, sh.N}, seed++);
    Tensor bias = random_tensor({sh.N}, seed++);
    Tensor Wr = bf16_rounded(W);
    const dnnl::memory narrow =
        fused_matmul::pack_weights(W.data<float>(), sh.K, sh.N, fused_matmul::bf16_narrow_panel_layout(sh.K, sh.N));
    const dnnl::memory rounded =
        fused_matmul::pack_weights(Wr.data<float>(), sh.K, sh.N, fused_matmul::panel_layout(sh.K, sh.N));
    for (int64_t M : {1, 5, 12, 13, 25, 32})
      for (Activation act : {Activation::kNone, Activation::kGelu})
        for (bool with_bias : {false, true}) {
          Tensor A = random_tensor({M, sh.K}, seed++);
          const float* b = with_bias ? bias.data<float>() : nullptr;
          ASSERT_TRUE(cpu::packed_kernel_reads(narrow.get_desc(), M));
          const std::vector<float> y = run_kernel(narrow, A, M, sh.N, b, act);
          const std::string where = describe(sh.K, sh.N, M, act, with_bias);
          EXPECT_EQ(max_diff(y, run_kernel(rounded, A, M, sh.N, b, act)), 0.0) << where;
          EXPECT_LE(max_diff(y, reference(A.data<float>(), W.data<float>(), b, M, sh.K, sh.N, act)),
                    0.01 * std::sqrt(double(sh.K)))
              << where;
        }
    EXPECT_FALSE(cpu::packed_kernel_reads(narrow.get_desc(), cpu::kFewRowsMax + 1));
  }
}

// Constant weights are packed in the layout the kernels read (float32: 32-column panels, which
// oneDNN's matmul reads at every M; bf16: the layout oneDNN prefers on AMX and AVX512-BF16), so
// FusedMatMul and the attention projections keep one copy of their weights.
TEST(GemmFewRows, ConstantWeightsArePackedInPanels) {
  if (!cpu::few_rows_supported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  for (auto [K, N] : {std::pair<int64_t, int64_t>{768, 3072}, {3072, 768}, {17, 5}}) {
    fused_matmul::Spec s;
    s.K = K, s.N = N;
    const auto layout = fused_matmul::constant_weights_layout(s, fused_matmul::kRepresentativeM);
    EXPECT_TRUE(layout == fused_matmul::panel_layout(K, N)) << K << "x" << N;
    for (int64_t M : {33, 128, 1000}) EXPECT_NO_THROW(fused_matmul::make_pd(s, M, layout)) << M;
  }
  if (!cpu::few_rows_bf16_supported()) return;
  for (auto [K, N] : {std::pair<int64_t, int64_t>{768, 2304}, {768, 768}, {3072, 768}, {17, 5}}) {
    fused_matmul::Spec s;
    s.K = K, s.N = N, s.bf16 = true;
    EXPECT_TRUE(fused_matmul::constant_weights_layout(s, fused_matmul::kRepresentativeM) ==
                fused_matmul::bf16_panel_layout(K, N))
        << "bf16 " << K << "x" << N;
  }
}

}  // namespace
}  // namespace ingot::testing
