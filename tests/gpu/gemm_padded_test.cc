// FusedMatMul with a constant W whose rows are not 16-byte multiples (a 1001-token LM head):
// the padded-pitch product, in bounded row chunks, equals the CPU's.
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

TEST(GpuGemmPadded, LmHeadWidthMatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (const char* act : {"", "Gelu"}) {
    Tensor a = random_tensor({3, 40, 64}, 7);
    Tensor w = random_tensor({64, 1001}, 8);
    Tensor b = random_tensor({1001}, 9);
    Attributes attrs;
    attrs.set("activation", string_attr(act));
    Model m = single_node_model("FusedMatMul", {a, w, b}, 1, attrs, 17, "ingot");
    for (size_t i = 1; i < 3; ++i) m.graph.initializers[m.graph.inputs[i]] = i == 1 ? w : b;
    m.graph.inputs.resize(1);
    for (bool graph : {true, false})
      expect_cuda_matches_cpu(m, {{"in0", a}}, 1e-4, 1e-4, std::string("LM head width 1001, act '") + act + "'", graph);
  }
}

}  // namespace
}  // namespace ingot::testing
