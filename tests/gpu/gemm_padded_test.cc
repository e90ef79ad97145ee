// FusedMatMul with a constant W whose rows are not 16-byte multiples (a 1001-token LM head):
// the product over the zero-padded width, in bounded row chunks, equals the CPU's, with and
// without a bias, in float32 and float16.
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

}  // namespace
}  // namespace ingot::testing
