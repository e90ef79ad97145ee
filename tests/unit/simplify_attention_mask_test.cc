// simplify_attention_mask: ingot.Attention reads its mask before the Expand and the And with an
// always-true term (transformers 5's `q_idx >= 0`) that broadcast it to [B, 1, S, S]; outputs
// do not change; a term that is not provably true (a Range from -1, a strict comparison at the
// bound) keeps the And; a GatherND that reads pad[b, k] over a (batch, key) index grid (torch.export's
// transformers 5 masks) becomes pad laid out by an Unsqueeze, and one whose grid is not exactly
// that stays (TorchScript's flattened Gather of b·S + k likewise); a Cast of an integer mask to
// bool is read through; with a profile, the fixtures read attention_mask itself; every BERT-style fixture of both exporters ends with a padding mask that does not
// vary by query.
#include <gtest/gtest.h>

#include <filesystem>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

constexpr int64_t B = 2, S = 6, E = 8;

Tensor int64_scalar(int64_t v) {
  Tensor t(DType::kInt64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

Tensor int64_vector(std::vector<int64_t> v) {
  Tensor t(DType::kInt64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Attention over X [B, S, E] with the mask Expand(And(pad[b, k], cmp(Range(start, start + S, 1)[q], 0))),
// built the way transformers 5 exports it: the query index term has shape [1, 1, S, 1].
Model masked_attention(int64_t range_start, const std::string& cmp) {
  GraphBuilder b("test:simplify_attention_mask");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId pad = b.input("pad", DType::kBool, {B, S});
  ValueId len = b.node("Gather", {b.node("Shape", {x}, "x_shape"), b.constant("one", int64_scalar(1))}, "len");
  ValueId start = b.constant("start", int64_scalar(range_start));
  ValueId q = b.node("Range", {start, b.node("Add", {len, start}, "limit"), b.constant("step", int64_scalar(1))}, "q_idx");
  ValueId q4 = b.node("Unsqueeze", {q, b.constant("q_axes", int64_vector({0, 1, 3}))}, "q_idx4");
  ValueId term = b.node(cmp, {q4, b.constant("zero", int64_scalar(0))}, "q_term");
  ValueId pad4 = b.node("Unsqueeze", {pad, b.constant("pad_axes", int64_vector({1, 2}))}, "pad4");
  ValueId both = b.node("And", {pad4, term}, "both");
  ValueId mask = b.node("Expand", {both, b.constant("mask_shape", int64_vector({B, 1, S, S}))}, "mask");
  ValueId w_qkv = b.constant("W_qkv", random_tensor({E, 3 * E}, 1));
  ValueId b_qkv = b.constant("b_qkv", random_tensor({3 * E}, 2));
  ValueId w_out = b.constant("W_out", random_tensor({E, E}, 3));
  ValueId b_out = b.constant("b_out", random_tensor({E}, 4));
  Attributes a;
  a.set("num_heads", int_attr(2));
  a.set("scale", float_attr(0.5f));
  a.set("mask_kind", string_attr("bool"));
  b.output(b.node("Attention", {x, w_qkv, b_qkv, mask, w_out, b_out}, a, "ingot"));
  return b.m;
}

std::map<std::string, Tensor> feeds() {
  Tensor pad(DType::kBool, {B, S});
  for (int64_t i = 0; i < B * S; ++i) pad.data<bool>()[i] = i % S < S - 2 * (i / S) - 1;  // batch b keeps S - 2b - 1 keys
  return {{"X", random_tensor({B, S, E}, 5)}, {"pad", pad}};
}

// The name of the value the optimized Attention reads as its mask.
std::string mask_read(const Engine& e) {
  for (const Node& n : e.model().graph.nodes)
    if (n.op_type == "Attention") return e.model().graph.value(n.inputs[3]).name;
  return "";
}

Tensor run(const Model& m, const EngineOptions& o, std::string* mask_name = nullptr, bool int_pad = false) {
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  if (mask_name) *mask_name = mask_read(**e);
  auto in = feeds();
  if (int_pad) {  // 0 / 7 for false / true: any nonzero attends
    Tensor p(DType::kInt64, {B, S});
    for (int64_t i = 0; i < B * S; ++i) p.data<int64_t>()[i] = in["pad"].data<bool>()[i] ? 7 : 0;
    in["pad"] = p;
  }
  auto out = (*e)->create_context()->run(in);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  return out ? (*out)[0].tensor : Tensor();
}

TEST(SimplifyAttentionMask, ReadsThePaddingMaskBeforeItsBroadcasts) {
  const Model m = masked_attention(0, "GreaterOrEqual");
  EngineOptions off;
  off.disabled_passes = {"simplify_attention_mask"};
  std::string kept, simplified;
  const Tensor ref = run(m, off, &kept);
  const Tensor got = run(m, EngineOptions{}, &simplified);
  EXPECT_EQ(kept, "mask");
  EXPECT_EQ(simplified, "pad4");
  ASSERT_TRUE(ref.defined() && got.defined());
  EXPECT_LT(max_abs_diff(got, ref), 1e-6);
}

TEST(SimplifyAttentionMask, KeepsTermsNotProvablyTrue) {
  // Range(-1, S - 1): q_idx >= 0 is false for the first query. Greater(Range(0, S), 0): likewise.
  for (auto [start, cmp] : {std::pair<int64_t, const char*>{-1, "GreaterOrEqual"}, {0, "Greater"}}) {
    std::string read;
    run(masked_attention(start, cmp), EngineOptions{}, &read);
    EXPECT_EQ(read, "both") << start << " " << cmp;  // the Expand goes, the And stays
  }
}

// Attention whose mask is GatherND(pad, idx) over the grid [B, 1, 1, S] of (batch, key) pairs,
// built as torch.export writes transformers 5's padding mask: the batch index Range(0, B)
// unsqueezed to [B, 1, 1, 1], the key index Range(key_start, key_start + S) to [1, 1, 1, S]
// (`swap`: the two components in the other order, so the gather transposes). `int_pad`: pad is
// an int64 input cast to bool first, as attention_mask is.
Model gathered_mask_attention(int64_t key_start, bool swap, bool int_pad = false) {
  GraphBuilder b("test:simplify_attention_mask_gather");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  ValueId pad = b.input("pad", int_pad ? DType::kInt64 : DType::kBool, {B, S});
  if (int_pad) {
    Attributes to;
    to.set("to", int_attr(int64_t(DType::kBool)));
    pad = b.node("Cast", {pad}, "pad_bool", to);
  }
  ValueId shape = b.node("Shape", {x}, "x_shape");
  ValueId zero = b.constant("zero", int64_scalar(0)), step = b.constant("step", int64_scalar(1));
  ValueId nb = b.node("Gather", {shape, b.constant("axis0", int64_scalar(0))}, "nb");
  ValueId ns = b.node("Gather", {shape, b.constant("axis1", int64_scalar(1))}, "ns");
  ValueId ks = b.constant("key_start", int64_scalar(key_start));
  ValueId bi = b.node("Unsqueeze", {b.node("Range", {zero, nb, step}, "b_idx"), b.constant("b_axes", int64_vector({1, 2, 3}))}, "b_idx4");
  ValueId ki = b.node("Unsqueeze", {b.node("Range", {ks, b.node("Add", {ns, ks}, "k_end"), step}, "k_idx"),
                                    b.constant("k_axes", int64_vector({0, 1, 2}))},
                      "k_idx4");
  ValueId grid = b.node("Shape", {b.node("Max", {bi, ki}, "grid_max")}, "grid");
  ValueId last = b.constant("last", int64_vector({-1}));
  ValueId bcol = b.node("Unsqueeze", {b.node("Expand", {bi, grid}, "b_grid"), last}, "b_col");
  ValueId kcol = b.node("Unsqueeze", {b.node("Expand", {ki, grid}, "k_grid"), last}, "k_col");
  Attributes cat;
  cat.set("axis", int_attr(-1));
  ValueId idx = swap ? b.node("Concat", {kcol, bcol}, "idx", cat) : b.node("Concat", {bcol, kcol}, "idx", cat);
  ValueId mask = b.node("GatherND", {pad, idx}, "mask");
  Attributes a;
  a.set("num_heads", int_attr(2));
  a.set("scale", float_attr(0.5f));
  a.set("mask_kind", string_attr("bool"));
  b.output(b.node("Attention",
                  {x, b.constant("W_qkv", random_tensor({E, 3 * E}, 1)), b.constant("b_qkv", random_tensor({3 * E}, 2)), mask,
                   b.constant("W_out", random_tensor({E, E}, 3)), b.constant("b_out", random_tensor({E}, 4))},
                  a, "ingot"));
  return b.m;
}

TEST(SimplifyAttentionMask, ReadsAGatheredPaddingMaskLaidOut) {
  const Model m = gathered_mask_attention(0, false);
  EngineOptions off;
  off.disabled_passes = {"simplify_attention_mask"};
  std::string kept, simplified;
  const Tensor ref = run(m, off, &kept);
  const Tensor got = run(m, EngineOptions{}, &simplified);
  EXPECT_EQ(kept, "mask");
  EXPECT_EQ(simplified, "mask_node/as_laid_out");
  ASSERT_TRUE(ref.defined() && got.defined());
  EXPECT_LT(max_abs_diff(got, ref), 1e-6);
}

// The same over an int64 pad cast to bool: the Attention reads the int64 values themselves.
TEST(SimplifyAttentionMask, ReadsAnIntegerMaskWithoutItsCast) {
  const Model m = gathered_mask_attention(0, false, true);
  EngineOptions off;
  off.disabled_passes = {"simplify_attention_mask"};
  std::string kept, simplified;
  const Tensor ref = run(m, off, &kept, true);
  auto e = Engine::from_model(m, EngineOptions{});
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const Tensor got = run(m, EngineOptions{}, &simplified, true);
  EXPECT_EQ(simplified, "mask_node/as_laid_out");
  for (const Node& n : (*e)->model().graph.nodes) {
    EXPECT_NE(n.op_type, "Cast");
    if (n.op_type == "Unsqueeze") EXPECT_EQ((*e)->model().graph.value(n.inputs[0]).name, "pad");
  }
  ASSERT_TRUE(ref.defined() && got.defined());
  EXPECT_LT(max_abs_diff(got, ref), 1e-6);
}

// TorchScript's form of the same read: Gather(Flatten(pad), b·S + k) over the grid, reshaped to
// [B, 1, 1, S]; `stride` scales the batch index (S reads the layout, S - 1 does not).
Model flat_gathered_mask_attention(bool stride_is_width) {
  GraphBuilder b("test:simplify_attention_mask_flat_gather");
  ValueId x = b.input("X", DType::kFloat32, {B, S, E});
  Attributes to;
  to.set("to", int_attr(int64_t(DType::kBool)));
  ValueId pad = b.node("Cast", {b.input("pad", DType::kInt64, {B, S})}, "pad_bool", to);
  ValueId shape = b.node("Shape", {pad}, "pad_shape");
  ValueId zero = b.constant("zero", int64_scalar(0)), step = b.constant("step", int64_scalar(1));
  ValueId nb = b.node("Gather", {shape, b.constant("axis0", int64_scalar(0))}, "nb");
  ValueId ns = b.node("Gather", {shape, b.constant("axis1", int64_scalar(1))}, "ns");
  ValueId bi = b.node("Unsqueeze", {b.node("Range", {zero, nb, step}, "b_idx"), b.constant("b_axes", int64_vector({1, 2, 3}))}, "b_idx4");
  ValueId ki = b.node("Unsqueeze", {b.node("Range", {zero, ns, step}, "k_idx"), b.constant("k_axes", int64_vector({0, 1, 2}))}, "k_idx4");
  ValueId stride = stride_is_width ? ns : b.node("Sub", {ns, step}, "ns_minus_1");
  ValueId idx = b.node("Add", {ki, b.node("Mul", {bi, stride}, "row_start")}, "idx");
  Attributes fl;
  fl.set("axis", int_attr(2));
  ValueId flat = b.node("Flatten", {pad}, "pad_flat", fl);
  ValueId g = b.node("Gather", {flat, idx}, "gathered");
  ValueId r1 = b.node("Reshape", {g, b.constant("minus1", int64_vector({-1}))}, "gathered_flat");
  ValueId mask = b.node("Reshape", {r1, b.node("Shape", {idx}, "grid_shape")}, "mask");
  Attributes a;
  a.set("num_heads", int_attr(2));
  a.set("scale", float_attr(0.5f));
  a.set("mask_kind", string_attr("bool"));
  b.output(b.node("Attention",
                  {x, b.constant("W_qkv", random_tensor({E, 3 * E}, 1)), b.constant("b_qkv", random_tensor({3 * E}, 2)), mask,
                   b.constant("W_out", random_tensor({E, E}, 3)), b.constant("b_out", random_tensor({E}, 4))},
                  a, "ingot"));
  return b.m;
}

TEST(SimplifyAttentionMask, ReadsAFlatGatheredMaskLaidOut) {
  const Model m = flat_gathered_mask_attention(true);
  EngineOptions off;
  off.disabled_passes = {"simplify_attention_mask"};
  std::string kept, simplified;
  const Tensor ref = run(m, off, &kept, true);
  const Tensor got = run(m, EngineOptions{}, &simplified, true);
  EXPECT_EQ(kept, "mask");
  EXPECT_EQ(simplified, "mask_node/as_laid_out");
  ASSERT_TRUE(ref.defined() && got.defined());
  EXPECT_LT(max_abs_diff(got, ref), 1e-6);
  std::string read;
  run(flat_gathered_mask_attention(false), EngineOptions{}, &read, true);
  EXPECT_EQ(read, "mask");  // rows b·(S - 1) + k: not the layout
}

TEST(SimplifyAttentionMask, KeepsGathersThatAreNotTheLayout) {
  // Keys from 1: pad[b, k + 1], a shifted read. Batch and key components swapped: pad[k, b], a
  // transposing read. Neither is the layout (both would index past pad: the test only builds them).
  for (auto [key_start, swap] : {std::pair<int64_t, bool>{1, false}, {0, true}}) {
    auto e = Engine::from_model(gathered_mask_attention(key_start, swap), EngineOptions{});
    ASSERT_TRUE(e.has_value()) << e.status().message();
    EXPECT_EQ(mask_read(**e), "mask") << key_start << " " << swap;
  }
}

// The mask every fixture's Attention reads, at the fixture's own input shapes, does not vary by
// query: shape [.., 1, S].
TEST(SimplifyAttentionMask, TransformerFixturesReadKeyMasks) {
  for (const char* model : {"bert", "distilbert", "roberta"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      SCOPED_TRACE(std::string(model) + "/" + ex);
      auto f = optimized_fixture(model, ex);
      ASSERT_TRUE(f.has_value()) << f.status().message();
      EXPECT_EQ(rewrites_of(f->engine->pass_reports(), "simplify_attention_mask"), 2);  // one per layer
      for (const Node& n : f->engine->model().graph.nodes) {
        if (n.op_type != "Attention") continue;
        ASSERT_GT(n.inputs.size(), 3u);
        const Shape& ms = f->metas[size_t(n.inputs[3])].shape;
        ASSERT_GE(ms.size(), 2u);
        EXPECT_EQ(ms[ms.size() - 2], 1) << shape_str(ms);
      }
    }
  }
}

// With a profile, every BERT-style fixture of both exporters reads attention_mask itself (an
// Unsqueeze, a view): no Cast, Gather or GatherND is left on the way to the kernel.
TEST(SimplifyAttentionMask, TransformerFixturesWithAProfileReadAttentionMaskItself) {
  for (const char* model : {"bert", "distilbert", "roberta"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      SCOPED_TRACE(std::string(model) + "/" + ex);
      const auto dir = std::filesystem::path(INGOT_SOURCE_DIR) / "tests" / "models" / model;
      auto inputs = read_npz((dir / "inputs.npz").string());
      ASSERT_TRUE(inputs.has_value());
      EngineOptions opts;
      Profile p;
      for (const auto& [name, t] : *inputs) p.min[name] = {1, 16}, p.opt[name] = {2, 16}, p.max[name] = {4, 16};
      opts.profiles.push_back(p);
      auto e = Engine::from_onnx((dir / ("model." + std::string(ex) + ".onnx")).string(), opts);
      ASSERT_TRUE(e.has_value()) << e.status().message();
      const Graph& g = (*e)->model().graph;
      int attention = 0;
      for (const Node& n : g.nodes) {
        if (n.op_type != "Attention") continue;
        ++attention;
        const Node* un = nullptr;
        for (const Node& m : g.nodes)
          if (!m.outputs.empty() && m.outputs[0] == n.inputs[3]) un = &m;
        ASSERT_NE(un, nullptr);
        EXPECT_EQ(un->op_type, "Unsqueeze");
        EXPECT_EQ(g.value(un->inputs[0]).name, "attention_mask");
      }
      EXPECT_EQ(attention, 2);
    }
  }
}

}  // namespace
}  // namespace ingot
