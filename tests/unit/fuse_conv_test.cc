// fuse_conv_bn, fuse_conv_activation and the ingot.FusedConv kernel: each rewrite happens when
// it should, not when a condition fails, and the optimized engine matches the unoptimized one.
#include <gtest/gtest.h>

#include "backends/cpu/gemm_few_rows.h"

#include <filesystem>
#include <functional>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "pass_test_util.h"
#include "passes/pass.h"
#include "runtime/engine.h"

namespace ingot {
namespace {

using testing::float_attr;
using testing::int_attr;
using testing::ints_attr;
using testing::max_abs_diff;
using testing::random_tensor;
using testing::string_attr;

// Builds small graphs node by node (node i is named <Op><i>).
struct Builder : testing::GraphBuilder {
  Builder() : GraphBuilder("test:fuse_conv", 17) {}
  Graph& g() { return m.graph; }
  ValueId input(const std::string& name, Shape s, DType t = DType::kFloat32) { return GraphBuilder::input(name, t, s); }
  ValueId init(const std::string& name, Tensor t) { return constant(name, std::move(t)); }
};

Attributes conv_attrs(int64_t group = 1, int64_t stride = 1, int64_t pad = 1) {
  Attributes a;
  a.set("group", int_attr(group));
  a.set("strides", ints_attr({stride, stride}));
  a.set("pads", ints_attr({pad, pad, pad, pad}));
  return a;
}

// BatchNormalization's four parameters as initializers, with a positive variance.
std::vector<ValueId> bn_params(Builder& b, int64_t c, uint32_t seed) {
  return {b.init("bn_s", random_tensor({c}, seed, 0.5f, 1.5f)), b.init("bn_b", random_tensor({c}, seed + 1)),
          b.init("bn_m", random_tensor({c}, seed + 2)), b.init("bn_v", random_tensor({c}, seed + 3, 0.2f, 2.f))};
}

struct Compared {
  std::map<std::string, int> ops;  // "domain.Op" counts of the optimized graph
  double diff = 1e300;
  double scale = 0;  // the reference outputs' max abs value
  std::shared_ptr<Engine> opt;
};

// Runs the model with `reference` options and fully optimized on the same feeds: the optimized
// engine, its op counts and the max abs difference over all outputs (any numeric dtype).
Compared compare_against(const Model& m, const std::map<std::string, Tensor>& feeds, const EngineOptions& reference) {
  Compared r;
  auto e0 = Engine::from_model(m, reference);
  auto e1 = Engine::from_model(m);
  EXPECT_TRUE(e0.has_value()) << e0.status().message();
  EXPECT_TRUE(e1.has_value()) << e1.status().message();
  if (!e0 || !e1) return r;
  r.opt = *e1;
  for (const Node& n : (*e1)->model().graph.nodes) r.ops[(n.domain.empty() ? "" : n.domain + ".") + n.op_type]++;
  auto o0 = (*e0)->create_context()->run(feeds);
  auto o1 = (*e1)->create_context()->run(feeds);
  EXPECT_TRUE(o0.has_value()) << o0.status().message();
  EXPECT_TRUE(o1.has_value()) << o1.status().message();
  if (!o0 || !o1) return r;
  r.diff = 0;
  for (size_t i = 0; i < o0->size(); ++i) {
    EXPECT_EQ((*o0)[i].name, (*o1)[i].name);
    const Tensor &a = (*o0)[i].tensor, &b = (*o1)[i].tensor;
    EXPECT_EQ(a.dtype(), b.dtype());
    EXPECT_EQ(a.shape(), b.shape());
    if (a.dtype() != b.dtype() || a.shape() != b.shape()) return r;
    for (int64_t k = 0; k < a.numel(); ++k) {
      r.diff = std::max(r.diff, std::fabs(a.scalar_as_double(k) - b.scalar_as_double(k)));
      r.scale = std::max(r.scale, std::fabs(a.scalar_as_double(k)));
    }
  }
  return r;
}

// Optimized against the optimizer off.
Compared compare(const Model& m, const std::map<std::string, Tensor>& feeds) {
  EngineOptions plain;
  plain.optimize = false;
  return compare_against(m, feeds, plain);
}

const Node* find_op(const Engine& e, const std::string& op) {
  for (const Node& n : e.model().graph.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(FuseConvBn, FoldsIntoConvWithBiasAndRelu) {
  Builder b;
  ValueId x = b.input("x", {2, 4, 7, 7});
  ValueId w = b.init("w", random_tensor({6, 4, 3, 3}, 1));
  ValueId bias = b.init("b", random_tensor({6}, 2));
  ValueId c = b.node("Conv", {x, w, bias}, conv_attrs());
  auto p = bn_params(b, 6, 3);
  Attributes eps;
  eps.set("epsilon", float_attr(1e-3f));
  ValueId y = b.node("BatchNormalization", {c, p[0], p[1], p[2], p[3]}, eps);
  b.output(b.node("Relu", {y}));
  auto r = compare(b.m, {{"x", random_tensor({2, 4, 7, 7}, 9)}});
  EXPECT_EQ(r.ops["BatchNormalization"], 0);
  EXPECT_EQ(r.ops["Relu"], 0);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 1);
  EXPECT_LE(r.diff, 1e-4);
}

TEST(FuseConvBn, FoldsWithoutConvBiasAndKeepsSharedWeights) {
  // Two convs read the same W; only one feeds a BN. The other must still see the original W.
  Builder b;
  ValueId x = b.input("x", {1, 3, 5, 5});
  ValueId w = b.init("w", random_tensor({4, 3, 3, 3}, 4));
  ValueId c1 = b.node("Conv", {x, w}, conv_attrs());
  ValueId c2 = b.node("Conv", {x, w}, conv_attrs());
  auto p = bn_params(b, 4, 5);
  b.output(b.node("BatchNormalization", {c1, p[0], p[1], p[2], p[3]}));
  b.output(c2);
  auto r = compare(b.m, {{"x", random_tensor({1, 3, 5, 5}, 6)}});
  EXPECT_EQ(r.ops["BatchNormalization"], 0);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 2);
  EXPECT_LE(r.diff, 1e-4);
}

TEST(FuseConvBn, KeepsBnWhenConvOutputHasSecondConsumer) {
  Builder b;
  ValueId x = b.input("x", {1, 3, 5, 5});
  ValueId c = b.node("Conv", {x, b.init("w", random_tensor({4, 3, 3, 3}, 7))}, conv_attrs());
  auto p = bn_params(b, 4, 8);
  b.output(b.node("BatchNormalization", {c, p[0], p[1], p[2], p[3]}));
  b.output(b.node("Sigmoid", {c}));
  auto r = compare(b.m, {{"x", random_tensor({1, 3, 5, 5}, 9)}});
  EXPECT_EQ(r.ops["BatchNormalization"], 1);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvBn, KeepsBnWithNonConstantParams) {
  Builder b;
  ValueId x = b.input("x", {1, 3, 5, 5});
  ValueId scale = b.input("scale", {4});
  ValueId c = b.node("Conv", {x, b.init("w", random_tensor({4, 3, 3, 3}, 10))}, conv_attrs());
  auto p = bn_params(b, 4, 11);
  b.output(b.node("BatchNormalization", {c, scale, p[1], p[2], p[3]}));
  auto r = compare(b.m, {{"x", random_tensor({1, 3, 5, 5}, 12)}, {"scale", random_tensor({4}, 13)}});
  EXPECT_EQ(r.ops["BatchNormalization"], 1);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvBn, FoldsIntoGroupedConvTranspose) {
  Builder b;
  ValueId x = b.input("x", {1, 4, 5, 5});
  Attributes a;
  a.set("group", int_attr(2));
  a.set("strides", ints_attr({2, 2}));
  // W: [C_in=4, M/g=3, 3, 3] -> 6 output channels.
  ValueId c = b.node("ConvTranspose", {x, b.init("w", random_tensor({4, 3, 3, 3}, 14)), b.init("b", random_tensor({6}, 15))}, a);
  auto p = bn_params(b, 6, 16);
  b.output(b.node("BatchNormalization", {c, p[0], p[1], p[2], p[3]}));
  auto r = compare(b.m, {{"x", random_tensor({1, 4, 5, 5}, 17)}});
  EXPECT_EQ(r.ops["BatchNormalization"], 0);
  EXPECT_EQ(r.ops["ConvTranspose"], 1);
  EXPECT_LE(r.diff, 1e-4);
}

TEST(FuseConvActivation, ResidualAddAndRelu) {
  Builder b;
  ValueId x = b.input("x", {2, 8, 6, 6});
  ValueId z = b.input("z", {2, 8, 6, 6});
  ValueId c = b.node("Conv", {x, b.init("w", random_tensor({8, 8, 3, 3}, 20)), b.init("b", random_tensor({8}, 21))},
                     conv_attrs());
  b.output(b.node("Relu", {b.node("Add", {z, c})}));
  auto r = compare(b.m, {{"x", random_tensor({2, 8, 6, 6}, 22)}, {"z", random_tensor({2, 8, 6, 6}, 23)}});
  EXPECT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 1);
  const Node* f = find_op(*r.opt, "FusedConv");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->inputs.size(), 4u);
  EXPECT_EQ(f->attrs.get_string("activation", "?"), "Relu");
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvActivation, EveryActivation) {
  struct Case {
    std::string op;
    Attributes attrs;
    bool clip_inputs = false;
  };
  std::vector<Case> cases(6);
  cases[0].op = "Relu";
  cases[1].op = "Sigmoid";
  cases[2].op = "HardSwish";
  cases[3].op = "LeakyRelu";
  cases[3].attrs.set("alpha", float_attr(0.3f));
  cases[4].op = "HardSigmoid";
  cases[4].attrs.set("alpha", float_attr(0.25f));
  cases[4].attrs.set("beta", float_attr(0.4f));
  cases[5].op = "Clip";
  cases[5].clip_inputs = true;
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.op);
    Builder b;
    ValueId x = b.input("x", {1, 3, 9, 9});
    ValueId c = b.node("Conv", {x, b.init("w", random_tensor({5, 3, 3, 3}, 30))}, conv_attrs(1, 2, 1));
    std::vector<ValueId> in = {c};
    if (cs.clip_inputs) {
      Tensor lo(DType::kFloat32, {}), hi(DType::kFloat32, {});
      lo.data<float>()[0] = -0.2f;
      hi.data<float>()[0] = 0.6f;
      in.push_back(b.init("lo", lo));
      in.push_back(b.init("hi", hi));
    }
    b.output(b.node(cs.op, in, cs.attrs));
    auto r = compare(b.m, {{"x", random_tensor({1, 3, 9, 9}, 31, -3.f, 3.f)}});
    EXPECT_EQ(r.ops.size(), 1u);
    EXPECT_EQ(r.ops["ingot.FusedConv"], 1);
    EXPECT_LE(r.diff, 1e-5);
  }
}

TEST(FuseConvActivation, ClipWithNonConstantBoundStays) {
  Builder b;
  ValueId x = b.input("x", {1, 3, 6, 6});
  ValueId lo = b.input("lo", {});
  ValueId c = b.node("Conv", {x, b.init("w", random_tensor({4, 3, 3, 3}, 40))}, conv_attrs());
  b.output(b.node("Clip", {c, lo}));
  Tensor lov(DType::kFloat32, {});
  lov.data<float>()[0] = 0.1f;
  auto r = compare(b.m, {{"x", random_tensor({1, 3, 6, 6}, 41)}, {"lo", lov}});
  EXPECT_EQ(r.ops["Clip"], 1);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 1);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvActivation, BroadcastAddAndGraphOutputIntermediateStay) {
  Builder b;
  ValueId x = b.input("x", {2, 4, 6, 6});
  ValueId z = b.input("z", {1, 4, 1, 1});  // broadcasts: not a residual of the conv's shape
  ValueId c = b.node("Conv", {x, b.init("w", random_tensor({4, 4, 3, 3}, 50))}, conv_attrs());
  ValueId a = b.node("Add", {c, z});
  b.output(a);  // also a graph output: the Relu cannot absorb it
  b.output(b.node("Relu", {a}));
  auto r = compare(b.m, {{"x", random_tensor({2, 4, 6, 6}, 51)}, {"z", random_tensor({1, 4, 1, 1}, 52)}});
  EXPECT_EQ(r.ops["Add"], 1);
  EXPECT_EQ(r.ops["Relu"], 1);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 1);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvActivation, ChannelsLastBetweenFusedConvs) {
  // conv -> relu -> conv (+ residual of the first relu) -> relu -> MaxPool: the edge between the
  // two convs (as X and as Z) becomes channels-last; the one into MaxPool stays NCHW.
  Builder b;
  ValueId x = b.input("x", {2, 8, 8, 8});
  ValueId r1 = b.node("Relu", {b.node("Conv", {x, b.init("w1", random_tensor({8, 8, 3, 3}, 60))}, conv_attrs())});
  ValueId c2 = b.node("Conv", {r1, b.init("w2", random_tensor({8, 8, 3, 3}, 61))}, conv_attrs());
  ValueId r2 = b.node("Relu", {b.node("Add", {c2, r1})});
  Attributes pool;
  pool.set("kernel_shape", ints_attr({2, 2}));
  b.output(b.node("MaxPool", {r2}, pool));
  auto r = compare(b.m, {{"x", random_tensor({2, 8, 8, 8}, 62)}});
  EXPECT_EQ(r.ops["ingot.FusedConv"], 2);
  EXPECT_EQ(r.ops["Add"] + r.ops["Relu"], 0);
  int cl_out = 0, cl_in = 0;
  for (const Node& n : r.opt->model().graph.nodes) {
    cl_out += int(n.attrs.get_int("y_channels_last", 0));
    cl_in += int(n.attrs.get_int("x_channels_last", 0) + n.attrs.get_int("z_channels_last", 0));
  }
  EXPECT_EQ(cl_out, 1);
  EXPECT_EQ(cl_in, 2);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvActivation, DepthwiseAndFloat16) {
  Builder b;
  ValueId x = b.input("x", {1, 6, 7, 7}, DType::kFloat16);
  Tensor w = random_tensor({6, 1, 3, 3}, 70);
  Tensor w16(DType::kFloat16, w.shape());
  for (int64_t i = 0; i < w.numel(); ++i) w16.data<float16>()[i] = float16(w.data<float>()[i]);
  b.output(b.node("HardSwish", {b.node("Conv", {x, b.init("w", w16)}, conv_attrs(6))}));
  Tensor xf = random_tensor({1, 6, 7, 7}, 71, -2.f, 2.f);
  Tensor x16(DType::kFloat16, xf.shape());
  for (int64_t i = 0; i < xf.numel(); ++i) x16.data<float16>()[i] = float16(xf.data<float>()[i]);
  EngineOptions plain;
  plain.optimize = false;
  auto e0 = Engine::from_model(b.m, plain);
  auto e1 = Engine::from_model(b.m);
  ASSERT_TRUE(e0 && e1);
  EXPECT_NE(find_op(**e1, "FusedConv"), nullptr);
  auto o0 = (*e0)->create_context()->run({{"x", x16}});
  auto o1 = (*e1)->create_context()->run({{"x", x16}});
  ASSERT_TRUE(o0 && o1);
  double d = 0;
  for (int64_t i = 0; i < (*o0)[0].tensor.numel(); ++i)
    d = std::max(d, std::fabs((*o0)[0].tensor.scalar_as_double(i) - (*o1)[0].tensor.scalar_as_double(i)));
  EXPECT_LE(d, 1e-2);
}

TEST(FusedConvKernel, BroadcastResidualAtRunTime) {
  // A residual fused for batch 1 (shapes probed with 1) must still work when the batch grows
  // and Z does not: the kernel adds it with broadcasting instead of the sum post-op.
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId x = b.input("x", {3, 4, 5, 5});
  ValueId z = b.input("z", {1, 4, 5, 5});
  Attributes a = conv_attrs();
  a.set("activation", string_attr("LeakyRelu"));
  Attribute p;
  p.kind = Attribute::Kind::kFloats;
  p.floats = {0.1f};
  a.set("activation_params", p);
  Tensor w = random_tensor({4, 4, 3, 3}, 80), bias = random_tensor({4}, 81);
  Node n;
  n.op_type = "FusedConv";
  n.domain = "ingot";
  n.inputs = {x, b.init("w", w), b.init("b", bias), z};
  n.attrs = a;
  n.outputs = {b.g().intern("y")};
  b.g().nodes.push_back(n);
  b.output(n.outputs[0]);
  EngineOptions plain;
  plain.optimize = false;
  auto e = Engine::from_model(b.m, plain);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  Tensor xv = random_tensor({3, 4, 5, 5}, 82), zv = random_tensor({1, 4, 5, 5}, 83);
  auto got = (*e)->create_context()->run({{"x", xv}, {"z", zv}});
  ASSERT_TRUE(got.has_value()) << got.status().message();
  // Reference: the unfused ops.
  Builder r;
  ValueId rx = r.input("x", {3, 4, 5, 5}), rz = r.input("z", {1, 4, 5, 5});
  ValueId rc = r.node("Conv", {rx, r.init("w", w), r.init("b", bias)}, conv_attrs());
  Attributes la;
  la.set("alpha", float_attr(0.1f));
  r.output(r.node("LeakyRelu", {r.node("Add", {rc, rz})}, la));
  auto re = Engine::from_model(r.m, plain);
  ASSERT_TRUE(re.has_value());
  auto want = (*re)->create_context()->run({{"x", xv}, {"z", zv}});
  ASSERT_TRUE(want.has_value());
  EXPECT_LE(max_abs_diff((*got)[0].tensor, (*want)[0].tensor), 1e-5);
}

TEST(FusedConvKernel, RejectsBadInputs) {
  Builder b;
  b.m.opsets["ingot"] = 1;
  ValueId x = b.input("x", {1, 3, 5, 5});
  Node n;
  n.op_type = "FusedConv";
  n.domain = "ingot";
  n.inputs = {x, b.init("w", random_tensor({4, 2, 3, 3}, 90))};  // 2 input channels, X has 3
  n.attrs.set("activation", string_attr("Relu"));
  n.outputs = {b.g().intern("y")};
  b.g().nodes.push_back(n);
  b.output(n.outputs[0]);
  EngineOptions plain;
  plain.optimize = false;
  // Static shapes: the engine may reject it while building, else the run fails.
  auto e = Engine::from_model(b.m, plain);
  if (e) {
    EXPECT_FALSE((*e)->create_context()->run({{"x", random_tensor({1, 3, 5, 5}, 91)}}).has_value());
  }

  Builder b2;
  b2.m.opsets["ingot"] = 1;
  Node n2 = n;
  n2.inputs = {b2.input("x", {1, 3, 5, 5}), b2.init("w", random_tensor({4, 3, 3, 3}, 92))};
  n2.attrs.set("activation", string_attr("Gelu"));  // not one FusedConv knows
  n2.outputs = {b2.g().intern("y")};
  b2.g().nodes.push_back(n2);
  b2.output(n2.outputs[0]);
  EXPECT_FALSE(Engine::from_model(b2.m, plain).has_value());
}

// ---------------------------------------------------------------------------------------------
// Channels-last through pools

Attributes pool_attrs(std::vector<int64_t> k, std::vector<int64_t> strides, std::vector<int64_t> pads,
                      bool ceil = false) {
  Attributes a;
  a.set("kernel_shape", ints_attr(std::move(k)));
  a.set("strides", ints_attr(std::move(strides)));
  a.set("pads", ints_attr(std::move(pads)));
  if (ceil) a.set("ceil_mode", int_attr(1));
  return a;
}

// Optimized with every pass against every pass but fuse_conv_activation.
Compared compare_without_layout_pass(const Model& m, const std::map<std::string, Tensor>& feeds) {
  EngineOptions off;
  off.disabled_passes = {"fuse_conv_activation"};
  return compare_against(m, feeds, off);
}

// The optimized graph's node called `name` (the builder names nodes <Op><index>; a FusedConv
// keeps its Conv's name).
const Node* node_named(const Engine& e, const std::string& name) {
  for (const Node& n : e.model().graph.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

int64_t attr(const Node* n, const char* name) { return n ? n->attrs.get_int(name, 0) : -1; }

// A weight for a conv from c to k channels with a kernel of `spatial` dims of size ks.
Tensor conv_weight(int64_t k, int64_t c, size_t spatial, int64_t ks, uint32_t seed) {
  Shape s = {k, c};
  for (size_t i = 0; i < spatial; ++i) s.push_back(ks);
  return random_tensor(s, seed, -0.3f, 0.3f);
}

// relu(conv3x3(r) + r) with r = relu(conv3x3(in)): a residual block whose second convolution
// becomes a FusedConv with Z = r (and X = r).
ValueId residual_block(Builder& b, ValueId in, int64_t c_in, int64_t c, uint32_t seed) {
  const std::string id = std::to_string(seed);
  ValueId r = b.node("Relu", {b.node("Conv", {in, b.init("w" + id, conv_weight(c, c_in, 2, 3, seed))}, conv_attrs())});
  ValueId conv = b.node("Conv", {r, b.init("w" + id + "b", conv_weight(c, c, 2, 3, seed + 1))}, conv_attrs());
  return b.node("Relu", {b.node("Add", {conv, r})});
}

// compare() with INGOT_FUSED_CONV_VERBOSE set: also what the kernels said (their implementations).
std::pair<Compared, std::string> compare_with_conv_log(const Model& m, const std::map<std::string, Tensor>& feeds) {
  ::setenv("INGOT_FUSED_CONV_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  Compared r = compare(m, feeds);
  std::string log = ::testing::internal::GetCapturedStderr();
  ::unsetenv("INGOT_FUSED_CONV_VERBOSE");
  return {std::move(r), std::move(log)};
}

size_t occurrences(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST(FuseConvActivation, WinogradConvolutionsMatchTheReference) {
  // Two 3x3 convolutions over 16x16 pixels (Winograd's size), the second with a residual and
  // Relu, then one over 4x4 pixels (too few: direct). The kernel reports its implementations.
  Builder b;
  ValueId r2 = residual_block(b, b.input("x", {1, 16, 16, 16}), 16, 32, 80);
  ValueId small = b.node("MaxPool", {r2}, pool_attrs({4, 4}, {4, 4}, {0, 0, 0, 0}));
  b.output(b.node("Conv", {small, b.init("w3", conv_weight(16, 32, 2, 3, 82))}, conv_attrs()));
  auto [r, log] = compare_with_conv_log(b.m, {{"x", random_tensor({1, 16, 16, 16}, 83)}});
  EXPECT_EQ(r.ops["ingot.FusedConv"], 3);
  EXPECT_EQ(occurrences(log, "wino"), testing::cpu_has_avx512() ? 2u : 0u) << log;  // oneDNN 2.6 has Winograd for AVX-512 only
  EXPECT_LE(r.diff, 1e-6 * r.scale) << "max abs output " << r.scale;
}

TEST(FuseConvActivation, ThreeByThreeConvolutionsOnPanel16MatchTheReference) {
  // On CPUs with AVX2 and no AVX-512 the 3x3 convolutions between channels-last tensors run
  // conv_panel16 (the residual block's second, with its residual and Relu, its output in the
  // buffer of its residual that is its input too, and the conv after it); the first reads the
  // NCHW graph input and the last writes the NCHW graph output, so oneDNN runs those. Elsewhere
  // oneDNN runs all four.
  Builder b;
  ValueId r2 = residual_block(b, b.input("x", {2, 16, 9, 7}), 16, 32, 84);
  ValueId c3 = b.node("Relu", {b.node("Conv", {r2, b.init("w5", conv_weight(32, 32, 2, 3, 86))}, conv_attrs(1, 2, 1))});
  b.output(b.node("Conv", {c3, b.init("w6", conv_weight(16, 32, 2, 3, 87))}, conv_attrs()));
  auto [r, log] = compare_with_conv_log(b.m, {{"x", random_tensor({2, 16, 9, 7}, 88)}});
  EXPECT_EQ(r.ops["ingot.FusedConv"], 4);
  const bool here = cpu::panel16_supported() && !std::getenv("INGOT_CONV_PANEL16");
  EXPECT_EQ(occurrences(log, "conv_panel16"), here ? 2u : 0u) << log;
  EXPECT_EQ(occurrences(log, "with residual"), here ? 1u : 0u) << log;
  EXPECT_LE(r.diff, 1e-5 * std::max(1.0, r.scale)) << "max abs output " << r.scale;
}

TEST(FuseConvActivation, ResidualOutputTakesTheResidualsBufferEvenWhenItIsAlsoX) {
  // relu(conv(r) + r): the FusedConv's X and Z are both r, r is read by nothing later, so the
  // memory plan computes Y in r's buffer; the kernel must copy X before writing Y there (8x8:
  // the direct convolution, which runs on the caller's buffers).
  Builder b;
  ValueId block = residual_block(b, b.input("x", {1, 16, 8, 8}), 16, 16, 90);
  b.output(b.node("Conv", {block, b.init("w3", conv_weight(8, 16, 2, 1, 93))}, conv_attrs(1, 1, 0)));
  auto cmp = compare(b.m, {{"x", random_tensor({1, 16, 8, 8}, 92)}});
  ASSERT_TRUE(cmp.opt);
  EXPECT_EQ(cmp.ops["ingot.FusedConv"], 3);
  const MemoryPlan* plan = cmp.opt->memory_plan();
  ASSERT_NE(plan, nullptr);
  const Graph& g = cmp.opt->model().graph;
  int checked = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type != "FusedConv" || n.inputs.size() < 4) continue;
    ASSERT_EQ(n.inputs[0], n.inputs[3]);
    ValueId z = n.inputs[3], y = n.outputs[0];
    EXPECT_GE(plan->offset[size_t(y)], 0);
    EXPECT_EQ(plan->offset[size_t(y)], plan->offset[size_t(z)]);
    ++checked;
  }
  EXPECT_EQ(checked, 1);
  EXPECT_LE(cmp.diff, 1e-5 * std::max(1.0, cmp.scale));
}

TEST(FuseConvActivation, ChannelsLastThroughMaxPool) {
  // ResNet's stem: conv 7x7/2 + relu -> MaxPool 3x3/2 -> a 1x1 conv (the downsample) and a 3x3
  // conv whose sum goes through relu to the output. The downsample, visited first, absorbs the
  // Add and the Relu, so the 3x3 conv's output becomes its residual Z.
  Builder b;
  ValueId x = b.input("x", {2, 3, 20, 20});
  ValueId stem = b.node("Relu", {b.node("Conv", {x, b.init("w1", conv_weight(8, 3, 2, 7, 100))}, conv_attrs(1, 2, 3))});
  ValueId pool = b.node("MaxPool", {stem}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  ValueId down = b.node("Conv", {pool, b.init("w2", conv_weight(12, 8, 2, 1, 101))}, conv_attrs(1, 1, 0));
  ValueId body = b.node("Conv", {pool, b.init("w3", conv_weight(12, 8, 2, 3, 102))}, conv_attrs());
  b.output(b.node("Relu", {b.node("Add", {body, down})}));
  auto r = compare_without_layout_pass(b.m, {{"x", random_tensor({2, 3, 20, 20}, 103)}});
  ASSERT_TRUE(r.opt);
  EXPECT_EQ(r.ops["ingot.FusedConv"], 3);
  const Node* mp = find_op(*r.opt, "MaxPool");
  EXPECT_EQ(attr(mp, "channels_last"), 1);
  EXPECT_EQ(attr(node_named(*r.opt, "Conv0"), "y_channels_last"), 1);  // the stem
  EXPECT_EQ(attr(node_named(*r.opt, "Conv3"), "x_channels_last"), 1);  // the downsample
  EXPECT_EQ(attr(node_named(*r.opt, "Conv3"), "z_channels_last"), 1);
  EXPECT_EQ(attr(node_named(*r.opt, "Conv3"), "y_channels_last"), 0);  // a graph output
  EXPECT_EQ(attr(node_named(*r.opt, "Conv4"), "x_channels_last"), 1);  // the 3x3 conv
  EXPECT_EQ(attr(node_named(*r.opt, "Conv4"), "y_channels_last"), 1);  // read as Z
  EXPECT_LE(r.diff, 1e-5);

  // The pass counts 3 fusions and 3 values that changed layout (the stem's, the pool's and the
  // 3x3 conv's outputs).
  Model m = b.m;
  OptimizeOptions oo;
  auto reports = optimize(m, oo);
  ASSERT_TRUE(reports.has_value()) << reports.status().message();
  EXPECT_EQ(testing::rewrites_of(*reports, "fuse_conv_activation"), 6);
}

TEST(FuseConvActivation, ChannelsLastThroughPoolChain) {
  // conv -> AveragePool -> MaxPool -> conv: both pools pass the layout on.
  Builder b;
  ValueId x = b.input("x", {1, 5, 12, 12});
  ValueId c1 = b.node("Conv", {x, b.init("w1", conv_weight(6, 5, 2, 3, 110))}, conv_attrs());
  ValueId ap = b.node("AveragePool", {c1}, pool_attrs({2, 2}, {1, 1}, {0, 0, 1, 1}));
  ValueId mp = b.node("MaxPool", {ap}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  b.output(b.node("Conv", {mp, b.init("w2", conv_weight(4, 6, 2, 3, 111))}, conv_attrs()));
  auto r = compare_without_layout_pass(b.m, {{"x", random_tensor({1, 5, 12, 12}, 112)}});
  ASSERT_TRUE(r.opt);
  EXPECT_EQ(attr(find_op(*r.opt, "AveragePool"), "channels_last"), 1);
  EXPECT_EQ(attr(find_op(*r.opt, "MaxPool"), "channels_last"), 1);
  EXPECT_EQ(attr(node_named(*r.opt, "Conv3"), "x_channels_last"), 1);
  EXPECT_LE(r.diff, 1e-5);
}

TEST(FuseConvActivation, ChannelsLastIntoGlobalPools) {
  // The classifier head: conv + relu -> GlobalAveragePool / GlobalMaxPool -> Flatten -> Gemm.
  for (const char* gp : {"GlobalAveragePool", "GlobalMaxPool"}) {
    SCOPED_TRACE(gp);
    Builder b;
    ValueId x = b.input("x", {3, 4, 7, 6});
    ValueId c = b.node("Relu", {b.node("Conv", {x, b.init("w", conv_weight(10, 4, 2, 3, 120))}, conv_attrs())});
    ValueId flat = b.node("Flatten", {b.node(gp, {c})});
    Attributes gemm;
    gemm.set("transB", int_attr(1));
    b.output(b.node("Gemm", {flat, b.init("fc", random_tensor({5, 10}, 121)), b.init("fcb", random_tensor({5}, 122))},
                    gemm));
    auto r = compare_without_layout_pass(b.m, {{"x", random_tensor({3, 4, 7, 6}, 123)}});
    ASSERT_TRUE(r.opt);
    EXPECT_EQ(attr(find_op(*r.opt, gp), "x_channels_last"), 1);
    EXPECT_EQ(attr(find_op(*r.opt, "FusedConv"), "y_channels_last"), 1);
    EXPECT_LE(r.diff, 1e-5);
  }
}

TEST(FuseConvActivation, PoolStaysNchwUnlessEveryReaderAccepts) {
  struct Case {
    std::string what;
    // Adds what reads the MaxPool output `p` (and maybe the conv output `c`).
    std::function<void(Builder&, ValueId c, ValueId p)> readers;
  };
  auto conv2 = [](Builder& b, ValueId in) {
    return b.node("Conv", {in, b.init("w2", conv_weight(4, 6, 2, 3, 131))}, conv_attrs());
  };
  std::vector<Case> cases = {
      {"pool output is a graph output", [](Builder& b, ValueId, ValueId p) { b.output(p); }},
      {"pool read by Sigmoid", [](Builder& b, ValueId, ValueId p) { b.output(b.node("Sigmoid", {p})); }},
      {"pool read by a conv and by Sigmoid",
       [&](Builder& b, ValueId, ValueId p) {
         b.output(conv2(b, p));
         b.output(b.node("Sigmoid", {p}));
       }},
      {"conv output also read by Sigmoid",
       [&](Builder& b, ValueId c, ValueId p) {
         b.output(conv2(b, p));
         b.output(b.node("Sigmoid", {c}));
       }},
      {"pool read by a conv and by a pool that feeds Sigmoid",
       [&](Builder& b, ValueId, ValueId p) {
         b.output(conv2(b, p));
         b.output(b.node("Sigmoid", {b.node("MaxPool", {p}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}))}));
       }},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.what);
    Builder b;
    ValueId x = b.input("x", {1, 3, 9, 9});
    ValueId c = b.node("Conv", {x, b.init("w1", conv_weight(6, 3, 2, 3, 130))}, conv_attrs());
    ValueId p = b.node("MaxPool", {c}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}));
    cs.readers(b, c, p);
    auto r = compare_without_layout_pass(b.m, {{"x", random_tensor({1, 3, 9, 9}, 132)}});
    ASSERT_TRUE(r.opt);
    const Node* pool = node_named(*r.opt, "MaxPool1");
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(attr(pool, "channels_last"), 0);
    EXPECT_EQ(attr(node_named(*r.opt, "Conv0"), "y_channels_last"), 0);
    EXPECT_LE(r.diff, 1e-5);
  }
}

TEST(FuseConvActivation, MaxPoolWithIndicesStaysNchw) {
  Builder b;
  ValueId x = b.input("x", {1, 3, 8, 8});
  ValueId c = b.node("Conv", {x, b.init("w1", conv_weight(6, 3, 2, 3, 140))}, conv_attrs());
  ValueId p = b.node("MaxPool", {c}, pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}));
  ValueId idx = b.g().intern("indices");
  b.g().nodes.back().outputs.push_back(idx);
  b.output(b.node("Conv", {p, b.init("w2", conv_weight(4, 6, 2, 3, 141))}, conv_attrs()));
  b.output(idx);
  auto r = compare_without_layout_pass(b.m, {{"x", random_tensor({1, 3, 8, 8}, 142)}});
  ASSERT_TRUE(r.opt);
  EXPECT_EQ(attr(find_op(*r.opt, "MaxPool"), "channels_last"), 0);
  EXPECT_LE(r.diff, 1e-5);
}

// conv -> pool -> conv and conv -> pool -> global pool on odd shapes: the channels-last kernels
// (oneDNN nwc/nhwc/ndhwc pooling, the reference loop for dilations, the global pools) give what
// the NCHW ones give.
TEST(FuseConvActivation, ChannelsLastPoolsMatchNchw) {
  struct Case {
    std::string what, op;
    Shape x;  // NCHW input of the first conv
    Attributes pool;
  };
  auto avg = [](Attributes a, int include) {
    a.set("count_include_pad", int_attr(include));
    return a;
  };
  Attributes dil = pool_attrs({3, 3}, {1, 1}, {2, 2, 2, 2});
  dil.set("dilations", ints_attr({2, 2}));
  Attributes same;
  same.set("kernel_shape", ints_attr({3, 3}));
  same.set("strides", ints_attr({2, 2}));
  same.set("auto_pad", string_attr("SAME_UPPER"));
  std::vector<Case> cases = {
      {"3x3/2 p1 C=5", "MaxPool", {2, 3, 15, 13}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1})},
      {"ceil_mode uneven pads C=7", "MaxPool", {1, 4, 12, 10}, pool_attrs({2, 3}, {2, 2}, {1, 0, 1, 2}, true)},
      {"dilation 2 C=5", "MaxPool", {2, 3, 11, 9}, dil},
      {"auto_pad SAME_UPPER C=5", "MaxPool", {1, 3, 10, 9}, same},
      {"3x3/2 p1 exclude pad C=7", "AveragePool", {2, 4, 13, 11}, avg(pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), 0)},
      {"3x3/2 p1 include pad C=7", "AveragePool", {2, 4, 13, 11}, avg(pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), 1)},
      {"ceil_mode include pad C=5", "AveragePool", {1, 3, 10, 9},
       avg(pool_attrs({3, 2}, {2, 2}, {1, 0, 0, 1}, true), 1)},
      {"ceil_mode exclude pad C=5", "AveragePool", {1, 3, 10, 9},
       avg(pool_attrs({3, 2}, {2, 2}, {1, 0, 0, 1}, true), 0)},
      {"dilation 2 include pad C=7", "AveragePool", {2, 4, 9, 9}, avg(dil, 1)},
      {"1-D C=5", "MaxPool", {2, 3, 17}, pool_attrs({4}, {3}, {1, 2})},
      {"1-D include pad C=5", "AveragePool", {2, 3, 19}, avg(pool_attrs({5}, {2}, {2, 2}), 1)},
      {"3-D C=5", "MaxPool", {1, 2, 5, 6, 7}, pool_attrs({2, 2, 3}, {2, 2, 2}, {0, 1, 1, 0, 0, 1})},
  };
  uint32_t seed = 150;
  for (const Case& cs : cases) {
    for (const char* head : {"Conv", "GlobalAveragePool", "GlobalMaxPool"}) {
      SCOPED_TRACE(cs.op + " " + cs.what + " -> " + head);
      const size_t nd = cs.x.size() - 2;
      const int64_t c = cs.x[1] == 4 ? 7 : 5;
      Attributes ca;
      ca.set("pads", ints_attr(std::vector<int64_t>(2 * nd, 1)));
      Builder b;
      ValueId x = b.input("x", cs.x);
      ValueId c1 = b.node("Relu", {b.node("Conv", {x, b.init("w1", conv_weight(c, cs.x[1], nd, 3, seed))}, ca)});
      ValueId p = b.node(cs.op, {c1}, cs.pool);
      if (std::string(head) == "Conv")
        b.output(b.node("Conv", {p, b.init("w2", conv_weight(3, c, nd, 3, seed + 1))}, ca));
      else
        b.output(b.node(head, {p}));
      auto r = compare_without_layout_pass(b.m, {{"x", random_tensor(cs.x, seed + 2, -2.f, 2.f)}});
      seed += 3;
      ASSERT_TRUE(r.opt);
      EXPECT_EQ(attr(find_op(*r.opt, cs.op), "channels_last"), 1);
      EXPECT_LE(r.diff, 1e-5);
    }
  }
}

TEST(PoolKernel, ChannelsLastRefusesIndices) {
  Builder b;
  ValueId x = b.input("x", {1, 4, 4, 3});
  Attributes a = pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0});
  a.set("channels_last", int_attr(1));
  ValueId y = b.node("MaxPool", {x}, a);
  ValueId idx = b.g().intern("indices");
  b.g().nodes.back().outputs.push_back(idx);
  b.output(y);
  b.output(idx);
  EngineOptions plain;
  plain.optimize = false;
  auto e = Engine::from_model(b.m, plain);
  std::string msg;
  if (!e) {
    msg = e.status().message();
  } else {
    auto out = (*e)->create_context()->run({{"x", random_tensor({1, 4, 4, 3}, 160)}});
    ASSERT_FALSE(out.has_value());
    msg = out.status().message();
  }
  EXPECT_NE(msg.find("Indices"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// Every Conv of the CNN fixtures becomes a FusedConv (the outputs are checked against PyTorch
// by the ModelFixture tests, which run with the optimizer on), and ResNet's pools run
// channels-last.
TEST(FuseConvFixtures, EveryConvFused) {
  namespace fs = std::filesystem;
  for (const char* model : {"resnet18", "mobilenetv3"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      fs::path p = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / model / (std::string("model.") + ex + ".onnx");
      if (!fs::exists(p)) continue;
      SCOPED_TRACE(p.string());
      EngineOptions plain;
      plain.optimize = false;
      auto e0 = Engine::from_onnx(p.string(), plain);
      auto e1 = Engine::from_onnx(p.string());
      ASSERT_TRUE(e0.has_value()) << e0.status().message();
      ASSERT_TRUE(e1.has_value()) << e1.status().message();
      int convs = 0, fused = 0, left = 0;
      for (const Node& n : (*e0)->model().graph.nodes) convs += n.op_type == "Conv";
      for (const Node& n : (*e1)->model().graph.nodes) {
        fused += n.op_type == "FusedConv" && n.domain == "ingot";
        left += n.op_type == "Conv";
      }
      EXPECT_GT(convs, 0);
      EXPECT_EQ(fused, convs);
      EXPECT_EQ(left, 0);
      // ResNet's stem MaxPool and head GlobalAveragePool (the dynamo export has a ReduceMean
      // instead) stay in the channels-last chain.
      if (std::string(model) != "resnet18") continue;
      int max_pools = 0;
      for (const Node& n : (*e1)->model().graph.nodes) {
        if (n.op_type == "MaxPool") {
          ++max_pools;
          EXPECT_EQ(n.attrs.get_int("channels_last", 0), 1);
        }
        if (n.op_type == "GlobalAveragePool") {
          EXPECT_EQ(n.attrs.get_int("x_channels_last", 0), 1);
        }
      }
      EXPECT_EQ(max_pools, 1);
    }
  }
}

}  // namespace
}  // namespace ingot
