// A BERT-style embedding layer for tests of the fuse_embed_layer_norm pass and the
// ingot.EmbedLayerNorm kernels (CPU and CUDA).
#pragma once

#include <map>
#include <string>

#include "op_test_util.h"

namespace ingot::testing {

// ids [B, S] and type_ids [B, S] (int64), pos_ids [1, S] (S <= 130); Gather from three constant tables,
// Add(word, type) + pos, LayerNormalization over H.
inline Model embedding_model(int64_t vocab, int64_t h, bool with_type) {
  Model m;
  m.path = "test:embeddings";
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
    g.value(v).dtype = DType::kFloat32;
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
  ValueId ids = input("ids"), pos = input("pos_ids");
  ValueId word = node("Gather", {table("word", vocab, 1), ids}, "word_rows");
  ValueId x = word;
  if (with_type) {
    ValueId types = input("type_ids");
    x = node("Add", {word, node("Gather", {table("type", 2, 2), types}, "type_rows")}, "word_type");
  }
  ValueId s = node("Add", {x, node("Gather", {table("pos", 130, 3), pos}, "pos_rows")}, "sum");
  ValueId gamma = g.intern("gamma"), beta = g.intern("beta");
  g.initializers[gamma] = random_tensor({h}, 4, 0.5f, 1.5f);
  g.initializers[beta] = random_tensor({h}, 5);
  ValueId y = node("LayerNormalization", {s, gamma, beta}, "y");
  g.outputs.push_back(y);
  return m;
}

inline std::map<std::string, Tensor> embedding_feeds(int64_t b, int64_t s, int64_t vocab) {
  Tensor ids(DType::kInt64, {b, s}), types(DType::kInt64, {b, s}), pos(DType::kInt64, {1, s});
  for (int64_t i = 0; i < b * s; ++i) {
    ids.data<int64_t>()[i] = (i * 7919) % vocab - (i % 5 == 0 ? vocab : 0);  // some negative ids
    types.data<int64_t>()[i] = i % 2;
  }
  for (int64_t i = 0; i < s; ++i) pos.data<int64_t>()[i] = i;
  return {{"ids", ids}, {"type_ids", types}, {"pos_ids", pos}};
}

}  // namespace ingot::testing
