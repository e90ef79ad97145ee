// ingot.EmbedLayerNorm on CUDA against the CPU kernel (the optimizer fuses the embedding graph
// on both devices).
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

TEST(GpuEmbedLayerNorm, MatchesCpu) {
  INGOT_REQUIRE_GPU();
  for (int64_t h : {64, 768, 100}) {
    Model m;
    m.path = "test:gpu_embeddings";
    m.ir_version = 8;
    m.opsets[""] = 17;
    Graph& g = m.graph;
    auto input = [&](const char* name) {
      ValueId v = g.intern(name);
      g.value(v).dtype = DType::kInt64;
      // [batch, sequence]; position ids [1, sequence]
      g.value(v).shape = SymShape{std::string(name) == "pos_ids" ? Dim{1, ""} : Dim{-1, "batch"}, Dim{-1, "sequence"}};
      g.inputs.push_back(v);
      return v;
    };
    auto table = [&](const char* name, int64_t rows, uint32_t seed) {
      ValueId v = g.intern(name);
      g.initializers[v] = random_tensor({rows, h}, seed);
      return v;
    };
    auto node = [&](const char* op, std::vector<ValueId> in, const char* out) {
      Node n;
      n.op_type = op;
      n.name = out;
      n.inputs = std::move(in);
      n.outputs = {g.intern(out)};
      g.nodes.push_back(n);
      return n.outputs[0];
    };
    ValueId ids = input("ids"), types = input("type_ids"), pos = input("pos_ids");
    ValueId x = node("Add", {node("Gather", {table("word", 300, 1), ids}, "w"), node("Gather", {table("type", 2, 2), types}, "t")}, "x");
    ValueId s = node("Add", {x, node("Gather", {table("pos", 130, 3), pos}, "p")}, "s");
    ValueId gamma = g.intern("gamma"), beta = g.intern("beta");
    g.initializers[gamma] = random_tensor({h}, 4, 0.5f, 1.5f);
    g.initializers[beta] = random_tensor({h}, 5);
    g.outputs.push_back(node("LayerNormalization", {s, gamma, beta}, "y"));
    const int64_t B = 3, S = 77;
    Tensor tid(DType::kInt64, {B, S}), ttype(DType::kInt64, {B, S}), tpos(DType::kInt64, {1, S});
    for (int64_t i = 0; i < B * S; ++i) {
      tid.data<int64_t>()[i] = (i * 7919) % 300 - (i % 7 == 0 ? 300 : 0);
      ttype.data<int64_t>()[i] = (i / 3) % 2;
    }
    for (int64_t i = 0; i < S; ++i) tpos.data<int64_t>()[i] = i;
    expect_cuda_matches_cpu(m, {{"ids", tid}, {"type_ids", ttype}, {"pos_ids", tpos}}, 1e-5, 1e-4,
                            "EmbedLayerNorm h=" + std::to_string(h));
  }
}

}  // namespace
}  // namespace ingot::testing
