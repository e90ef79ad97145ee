// ingot.EmbedLayerNorm on CUDA against the CPU kernel (the optimizer fuses the embedding graph
// on both devices).
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

}  // namespace
}  // namespace ingot::testing
