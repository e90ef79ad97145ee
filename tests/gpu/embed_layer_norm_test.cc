// ingot.EmbedLayerNorm on CUDA against the CPU kernel (the optimizer fuses the embedding graph
// on both devices): float32 rows (the general kernel), and float16/bfloat16 rows that take the
// register kernel (widths 64, 520, 768 and 1024: one to four 8-element chunks per lane, a partial
// last chunk) or fall back to the general one (100: not a multiple of 8; 1032: too wide), with
// two and three lookups.
#include "../ops/embedding_model.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

TEST(GpuEmbedLayerNorm, MatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (int64_t h : {64, 768, 100})
    expect_cuda_matches_cpu(embedding_model(300, h, true), embedding_feeds(3, 77, 300), 1e-5, 1e-4,
                            "EmbedLayerNorm h=" + std::to_string(h));
}

TEST(GpuEmbedLayerNorm, HalfPrecisionMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (const char* precision : {"fp16", "bf16"})
    for (int64_t h : {64, 520, 768, 1024, 100, 1032})
      for (bool with_type : {false, true}) {
        auto feeds = embedding_feeds(3, 77, 300);
        if (!with_type) feeds.erase("type_ids");
        Model m = embedding_model(300, h, with_type);
        auto ref = run_model_on(m, feeds, "cpu", precision);
        auto got = run_model_on(m, feeds, "cuda", precision);
        ASSERT_EQ(ref.size(), got.size());
        // LayerNorm outputs are O(1); one 16-bit rounding of the output apart at most, plus the
        // order of the statistics' float32 sums
        const double tol = std::string(precision) == "fp16" ? 4e-3 : 3e-2;
        for (size_t i = 0; i < ref.size(); ++i)
          expect_close(got[i], ref[i], tol, tol,
                       std::string("EmbedLayerNorm ") + precision + " h=" + std::to_string(h) + (with_type ? " +type" : ""));
      }
}

}  // namespace
}  // namespace ingot::testing
