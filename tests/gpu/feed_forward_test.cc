// ingot.FeedForward on CUDA against its CPU kernel: float32/float16/bfloat16, BERT-base's widths
// at batch 1 (the one-kernel path for half types) and 2 sequences (composed), small widths on
// either path (one or two row blocks, the last one partial), every activation, no biases or beta;
// each engine runs three times, so the CUDA graph's replays are checked as well as its eager
// first run (and the grid counter the kernel resets), and each run must give the same bits. Rows
// that are not 16-byte multiples run on the CPU. Which sizes the one kernel takes is checked on
// the host.

#include "../ops/graph_builder.h"
#include "backends/cuda/feed_forward_impl.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Case {
  DType dt;
  int64_t rows, K, N;
  const char* act = "Gelu";
  bool biases = true;
};

Model feed_forward_model(const Case& c) {
  Attributes a;
  a.set("activation", string_attr(c.act));
  a.set("epsilon", float_attr(1e-12f));
  GraphBuilder b("test:feed_forward_gpu");
  auto opt = [&](const char* name, Tensor t) { return c.biases ? b.constant(name, t) : kNoValue; };
  // Weights of a trained layer's scale: G and the block's output stay near 1.
  b.output(b.node("FeedForward",
                  {b.input("X", c.dt, {c.rows, c.K}), b.constant("W1", random_of(c.dt, {c.K, c.N}, 1, -0.06, 0.06)),
                   opt("b1", random_of(c.dt, {c.N}, 2, -0.5, 0.5)), b.constant("W2", random_of(c.dt, {c.N, c.K}, 3, -0.03, 0.03)),
                   opt("b2", random_of(c.dt, {c.K}, 4, -0.5, 0.5)), b.constant("gamma", random_of(c.dt, {c.K}, 5, 0.5, 1.5)),
                   opt("beta", random_of(c.dt, {c.K}, 6, -0.5, 0.5))},
                  a, "ingot"));
  return b.m;
}

void check(const Case& c) {
  const std::string what = dtype_name(c.dt) + " rows " + std::to_string(c.rows) + " K " + std::to_string(c.K) + " N " +
                           std::to_string(c.N) + " act '" + c.act + "'" + (c.biases ? "" : " no biases or beta");
  const Model m = feed_forward_model(c);
  const std::map<std::string, Tensor> feeds{{"X", random_of(c.dt, {c.rows, c.K}, 7, -2, 2)}};
  auto ref = run_model_on(m, feeds, "cpu");
  ASSERT_EQ(ref.size(), 1u) << what;
  // Both sides round G and the block's sum to X's dtype; they differ by summation order (and for
  // half GELU, cuBLASLt's tanh form), so a rounding may flip before the LayerNorm.
  const double tol = c.dt == DType::kFloat32 ? 1e-4 : (c.dt == DType::kFloat16 ? 6e-3 : 4e-2);
  expect_cuda_runs_match(m, feeds, ref[0], tol, what);
}

TEST(GpuFeedForward, MatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t rows : {1, 128, 256}) check({dt, rows, 768, 3072});
    for (const char* act : {"", "Relu", "GeluTanh"}) check({dt, 128, 768, 3072, act});
    check({dt, 40, 64, 128, "Gelu", false});  // composed (K not a multiple of 192)
    check({dt, 40, 192, 384, "Gelu", false});  // one kernel for half types: 8 CTAs, no biases
    check({dt, 65, 192, 384, "Relu"});         // two row blocks, the second of one row
  }
}

// Host logic: the one kernel takes BERT-base's block at batch 1 in half types on an H100's 132
// multiprocessors (128 CTAs), and leaves float32, more rows, fewer multiprocessors than tiles and
// widths its tiling or shared memory cannot hold to the composed path.
TEST(FeedForwardBlock, SizesItTakes) {
  EXPECT_TRUE(cuda::feed_forward_block_fits(DType::kFloat16, 128, 768, 3072, 132));
  EXPECT_TRUE(cuda::feed_forward_block_fits(DType::kBFloat16, 1, 768, 3072, 132));
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat32, 128, 768, 3072, 132));
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat16, 129, 768, 3072, 132));
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat16, 128, 768, 3072, 114));  // 128 tiles
  EXPECT_TRUE(cuda::feed_forward_block_fits(DType::kFloat16, 64, 768, 3072, 114));    // 64 tiles
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat16, 128, 1024, 4096, 132));  // K % 48
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat16, 16, 960, 1920, 132));    // shared memory
  EXPECT_FALSE(cuda::feed_forward_block_fits(DType::kFloat16, 16, 768, 1000, 132));    // N % K
}

// Rows that are not 16-byte multiples: the CUDA kernel refuses the node, which then runs on the
// CPU with its copies, giving the CPU's bits.
TEST(GpuFeedForward, UnalignedRowsRunOnTheCpu) {
  INGOT_REQUIRE_GPU();
  const Case c{DType::kFloat16, 4, 36, 72};  // 72-byte rows of X
  const std::map<std::string, Tensor> feeds{{"X", random_of(c.dt, {c.rows, c.K}, 7, -2, 2)}};
  auto ref = run_model_on(feed_forward_model(c), feeds, "cpu");
  auto got = run_model_on(feed_forward_model(c), feeds, "cuda");
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  expect_close(got[0], ref[0], 0, 0, "FeedForward on the CPU from a cuda engine");
}

}  // namespace
}  // namespace ingot::testing
