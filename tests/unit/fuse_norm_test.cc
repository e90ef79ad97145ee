// fuse_gelu, fuse_layer_norm, fuse_skip_layer_norm and their kernels (ingot.Gelu,
// ingot.SkipLayerNorm): each rewrite fires on the forms exporters emit, does not fire when a
// condition fails, and the optimized engine matches the unoptimized one on random inputs.
// The fixture tests count the fused nodes in the real exported transformers.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/fused_norm_util.h"
#include "io/npy.h"
#include "runtime/engine.h"
#include "../ops/op_test_util.h"

namespace fs = std::filesystem;

namespace ingot {
namespace {

using testing::float_attr;
using testing::int_attr;
using testing::ints_attr;
using testing::random_tensor;
using testing::string_attr;

Tensor scalar(float v, Shape shape = {}) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::kInt64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Builds a Model node by node; values are created by name on first mention.
class Builder {
 public:
  explicit Builder(int opset = 17) {
    m_.path = "test:fuse_norm";
    m_.ir_version = 8;
    m_.opsets[""] = opset;
  }
  Builder& input(const std::string& name, Shape shape, DType dt = DType::kFloat32) {
    ValueId id = m_.graph.intern(name);
    m_.graph.value(id).dtype = dt;
    SymShape s;
    for (int64_t d : shape) s.push_back(Dim{d, {}});
    m_.graph.value(id).shape = s;
    m_.graph.inputs.push_back(id);
    shapes_[name] = shape;
    dtypes_[name] = dt;
    return *this;
  }
  Builder& constant(const std::string& name, Tensor t) {
    ValueId id = m_.graph.intern(name);
    m_.graph.value(id).dtype = t.dtype();
    m_.graph.initializers[id] = std::move(t);
    return *this;
  }
  Builder& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
    Node n;
    n.op_type = op;
    n.domain = domain;
    n.name = op + "_" + std::to_string(m_.graph.nodes.size());
    for (const auto& i : ins) n.inputs.push_back(i.empty() ? kNoValue : m_.graph.intern(i));
    for (const auto& o : outs) n.outputs.push_back(o.empty() ? kNoValue : m_.graph.intern(o));
    for (auto& [k, a] : attrs) n.attrs.set(k, a);
    m_.graph.nodes.push_back(std::move(n));
    return *this;
  }
  Builder& output(const std::string& name) {
    m_.graph.outputs.push_back(m_.graph.intern(name));
    return *this;
  }
  const Model& model() const { return m_; }
  std::map<std::string, Tensor> random_feeds(uint32_t seed, float lo = -3.f, float hi = 3.f) const {
    std::map<std::string, Tensor> f;
    for (const auto& [name, shape] : shapes_) {
      Tensor t = random_tensor(shape, seed++, lo, hi);
      if (dtypes_.at(name) == DType::kFloat16) {
        Tensor h(DType::kFloat16, shape);
        for (int64_t i = 0; i < t.numel(); ++i) h.data<float16>()[i] = float16(t.data<float>()[i]);
        t = h;
      }
      f[name] = t;
    }
    return f;
  }

 private:
  Model m_;
  std::map<std::string, Shape> shapes_;
  std::map<std::string, DType> dtypes_;
};

std::shared_ptr<Engine> build(const Model& m, bool optimize, std::set<std::string> disabled = {}) {
  EngineOptions o;
  o.optimize = optimize;
  o.disabled_passes = std::move(disabled);
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  return e ? *e : nullptr;
}

int count(const Engine& e, const std::string& op, const std::string& domain) {
  int n = 0;
  for (const Node& node : e.model().graph.nodes) n += node.op_type == op && node.domain == domain;
  return n;
}

double max_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return 1e300;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.scalar_as_double(i) - b.scalar_as_double(i)));
  return m;
}

// Optimized vs unoptimized on random inputs: every output within tol.
void expect_equivalent(const Builder& b, double tol, std::set<std::string> disabled = {}, float lo = -3.f,
                       float hi = 3.f) {
  auto ref = build(b.model(), false);
  auto opt = build(b.model(), true, std::move(disabled));
  ASSERT_TRUE(ref && opt);
  for (uint32_t seed : {1u, 2u}) {
    auto feeds = b.random_feeds(seed * 100, lo, hi);
    auto r = ref->create_context()->run(feeds);
    auto o = opt->create_context()->run(feeds);
    ASSERT_TRUE(r.has_value()) << r.status().message();
    ASSERT_TRUE(o.has_value()) << o.status().message();
    ASSERT_EQ(r->size(), o->size());
    for (size_t i = 0; i < r->size(); ++i)
      EXPECT_LE(max_diff((*r)[i].tensor, (*o)[i].tensor), tol) << "output " << (*r)[i].name;
  }
}

// ---------------------------------------------------------------------------------------------
// GELU

enum class Group { kHalfFirst, kHalfLast, kHalfInner };  // the three groupings of 0.5 * x * (1 + f)

// Appends "* x * 0.5" after t = 1 + f, grouped as `g`, producing "y".
void gelu_tail(Builder& b, Group g, float half = 0.5f) {
  b.constant("half", scalar(half));
  switch (g) {
    case Group::kHalfFirst:
      b.node("Mul", {"half", "x"}, {"hx"}).node("Mul", {"hx", "t"}, {"y"});
      break;
    case Group::kHalfLast:
      b.node("Mul", {"x", "t"}, {"xt"}).node("Mul", {"xt", "half"}, {"y"});
      break;
    case Group::kHalfInner:
      b.node("Mul", {"half", "t"}, {"ht"}).node("Mul", {"x", "ht"}, {"y"});
      break;
  }
}

Builder erf_gelu(Group g, bool mul_form, float sqrt2 = 1.4142135f, float half = 0.5f) {
  Builder b;
  b.input("x", {2, 3, 16});
  if (mul_form) {
    b.constant("k", scalar(1.f / sqrt2)).node("Mul", {"k", "x"}, {"a"});
  } else {
    b.constant("k", scalar(sqrt2)).node("Div", {"x", "k"}, {"a"});
  }
  b.constant("one", scalar(1.f)).node("Erf", {"a"}, {"f"}).node("Add", {"f", "one"}, {"t"});
  gelu_tail(b, g, half);
  b.output("y");
  return b;
}

enum class Cube { kPow, kMulLeft, kMulRight };

Builder tanh_gelu(Group g, Cube c, float coeff = 0.044715f) {
  Builder b;
  b.input("x", {2, 3, 16});
  switch (c) {
    case Cube::kPow: b.constant("three", scalar(3.f)).node("Pow", {"x", "three"}, {"x3"}); break;
    case Cube::kMulLeft: b.node("Mul", {"x", "x"}, {"x2"}).node("Mul", {"x2", "x"}, {"x3"}); break;
    case Cube::kMulRight: b.node("Mul", {"x", "x"}, {"x2"}).node("Mul", {"x", "x2"}, {"x3"}); break;
  }
  b.constant("c", scalar(coeff)).node("Mul", {"x3", "c"}, {"cx3"});
  b.node("Add", {"x", "cx3"}, {"inner"});
  b.constant("k", scalar(0.7978845608f)).node("Mul", {"inner", "k"}, {"a"});
  b.constant("one", scalar(1.f)).node("Tanh", {"a"}, {"f"}).node("Add", {"one", "f"}, {"t"});
  gelu_tail(b, g);
  b.output("y");
  return b;
}

TEST(FuseNormGelu, ErfFormsFuseInEveryGrouping) {
  for (Group g : {Group::kHalfFirst, Group::kHalfLast, Group::kHalfInner}) {
    for (bool mul_form : {false, true}) {
      Builder b = erf_gelu(g, mul_form);
      auto e = build(b.model(), true);
      ASSERT_TRUE(e);
      EXPECT_EQ(count(*e, "Gelu", "ingot"), 1) << int(g) << mul_form;
      EXPECT_EQ(e->model().graph.nodes.size(), 1u);
      EXPECT_EQ(e->model().graph.nodes[0].attrs.get_string("approximate", ""), "none");
      expect_equivalent(b, 1e-5);
    }
  }
}

TEST(FuseNormGelu, HalfAsDivByTwo) {
  Builder b;
  b.input("x", {4, 8});
  b.constant("k", scalar(1.41421356f)).node("Div", {"x", "k"}, {"a"});
  b.constant("one", scalar(1.f)).node("Erf", {"a"}, {"f"}).node("Add", {"one", "f"}, {"t"});
  b.constant("two", scalar(2.f)).node("Div", {"x", "two"}, {"hx"}).node("Mul", {"t", "hx"}, {"y"}).output("y");
  auto e = build(b.model(), true);
  EXPECT_EQ(count(*e, "Gelu", "ingot"), 1);
  expect_equivalent(b, 1e-5);
}

TEST(FuseNormGelu, TanhFormsFuse) {
  for (Group g : {Group::kHalfFirst, Group::kHalfLast, Group::kHalfInner}) {
    for (Cube c : {Cube::kPow, Cube::kMulLeft, Cube::kMulRight}) {
      Builder b = tanh_gelu(g, c);
      auto e = build(b.model(), true);
      ASSERT_TRUE(e);
      EXPECT_EQ(count(*e, "Gelu", "ingot"), 1) << int(g) << int(c);
      EXPECT_EQ(e->model().graph.nodes.size(), 1u);
      EXPECT_EQ(e->model().graph.nodes[0].attrs.get_string("approximate", ""), "tanh");
      expect_equivalent(b, 1e-5);
    }
  }
}

TEST(FuseNormGelu, MismatchedConstantsDoNotFuse) {
  std::vector<Builder> cases = {erf_gelu(Group::kHalfLast, false, 1.5f), erf_gelu(Group::kHalfFirst, false, 1.4142135f, 0.6f),
                                erf_gelu(Group::kHalfInner, true, 1.3f), tanh_gelu(Group::kHalfFirst, Cube::kPow, 0.05f)};
  for (const Builder& b : cases) {
    auto e = build(b.model(), true);
    EXPECT_EQ(count(*e, "Gelu", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
}

TEST(FuseNormGelu, ExtraConsumerOrNonConstantBlocksFusion) {
  {  // erf output also a graph output
    Builder b = erf_gelu(Group::kHalfLast, false);
    b.output("f");
    EXPECT_EQ(count(*build(b.model(), true), "Gelu", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // 1 + erf read by another node too
    Builder b = erf_gelu(Group::kHalfFirst, false);
    b.node("Neg", {"t"}, {"nt"}).output("nt");
    EXPECT_EQ(count(*build(b.model(), true), "Gelu", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // the 0.5 is a graph input, not a constant
    Builder b;
    b.input("x", {2, 8}).input("half", {});
    b.constant("k", scalar(1.4142135f)).node("Div", {"x", "k"}, {"a"});
    b.constant("one", scalar(1.f)).node("Erf", {"a"}, {"f"}).node("Add", {"f", "one"}, {"t"});
    b.node("Mul", {"x", "t"}, {"xt"}).node("Mul", {"xt", "half"}, {"y"}).output("y");
    EXPECT_EQ(count(*build(b.model(), true), "Gelu", "ingot"), 0);
  }
  {  // x * (1 + erf(...)) with a different x in the tail
    Builder b;
    b.input("x", {2, 8}).input("z", {2, 8});
    b.constant("k", scalar(1.4142135f)).node("Div", {"x", "k"}, {"a"});
    b.constant("one", scalar(1.f)).node("Erf", {"a"}, {"f"}).node("Add", {"f", "one"}, {"t"});
    b.constant("half", scalar(0.5f)).node("Mul", {"z", "t"}, {"xt"}).node("Mul", {"xt", "half"}, {"y"}).output("y");
    EXPECT_EQ(count(*build(b.model(), true), "Gelu", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // tanh form whose Add does not add x itself
    Builder b;
    b.input("x", {2, 8}).input("z", {2, 8});
    b.constant("three", scalar(3.f)).node("Pow", {"x", "three"}, {"x3"});
    b.constant("c", scalar(0.044715f)).node("Mul", {"x3", "c"}, {"cx3"}).node("Add", {"z", "cx3"}, {"inner"});
    b.constant("k", scalar(0.7978845608f)).node("Mul", {"inner", "k"}, {"a"});
    b.constant("one", scalar(1.f)).node("Tanh", {"a"}, {"f"}).node("Add", {"one", "f"}, {"t"});
    gelu_tail(b, Group::kHalfFirst);
    b.output("y");
    EXPECT_EQ(count(*build(b.model(), true), "Gelu", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
}

TEST(FuseNormGelu, KernelMatchesExactGeluOnWideRange) {
  for (const char* approx : {"none", "tanh"}) {
    Tensor x(DType::kFloat32, {20001});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = -10.f + 0.001f * float(i);
    Attributes a;
    a.set("approximate", string_attr(approx));
    auto m = testing::single_node_model("Gelu", {x}, 1, a, 17, "ingot");
    auto e = build(m, false);
    auto out = e->create_context()->run({{"in0", x}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    const Tensor& y = (*out)[0].tensor;
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = double(x.data<float>()[i]);
      double want = std::string(approx) == "tanh" ? fused::gelu_tanh(v) : fused::gelu_erf(v);
      worst = std::max(worst, std::fabs(double(y.data<float>()[i]) - want));
    }
    EXPECT_LE(worst, 1e-5) << approx;
  }
}

TEST(FuseNormGelu, KernelRejectsBadAttribute) {
  Attributes a;
  a.set("approximate", string_attr("fast"));
  auto e = Engine::from_model(testing::single_node_model("Gelu", {random_tensor({4}, 1)}, 1, a, 17, "ingot"));
  EXPECT_FALSE(e.has_value());
}

// ---------------------------------------------------------------------------------------------
// Decomposed LayerNormalization

struct LnForm {
  int opset = 13;        // >= 18: axes as input
  bool pow = true;       // Pow(d, 2) or Mul(d, d)
  bool recip = false;    // Div or Reciprocal+Mul
  bool gamma = true, beta = true;
  int64_t axis = -1;
  bool eps_input = false;  // epsilon as a graph input (not constant)
  Shape gamma_shape = {16};
};

Builder decomposed_ln(const LnForm& f) {
  Builder b(f.opset);
  b.input("x", {2, 5, 16});
  auto mean = [&](const std::string& in, const std::string& out) {
    if (f.opset >= 18) {
      b.constant("axes_" + out, int64s({f.axis})).node("ReduceMean", {in, "axes_" + out}, {out});
    } else {
      b.node("ReduceMean", {in}, {out}, {{"axes", ints_attr({f.axis})}});
    }
  };
  mean("x", "m");
  b.node("Sub", {"x", "m"}, {"d"});
  if (f.pow) b.constant("two", scalar(2.f)).node("Pow", {"d", "two"}, {"sq"});
  else b.node("Mul", {"d", "d"}, {"sq"});
  mean("sq", "v");
  if (f.eps_input) b.input("eps", {});
  else b.constant("eps", scalar(1e-5f));
  b.node("Add", {"v", "eps"}, {"ve"}).node("Sqrt", {"ve"}, {"s"});
  if (f.recip) b.node("Reciprocal", {"s"}, {"r"}).node("Mul", {"r", "d"}, {"n"});
  else b.node("Div", {"d", "s"}, {"n"});
  std::string last = "n";
  if (f.gamma) {
    b.constant("gamma", random_tensor(f.gamma_shape, 7, 0.5f, 1.5f)).node("Mul", {last, "gamma"}, {"g"});
    last = "g";
  }
  if (f.beta) {
    b.constant("beta", random_tensor({16}, 8)).node("Add", {"beta", last}, {"y"});
    last = "y";
  }
  b.output(last);
  return b;
}

TEST(FuseNormLayerNorm, DecomposedFormsFuse) {
  std::vector<LnForm> forms;
  forms.push_back({});
  forms.push_back({18, false, true, true, true});
  forms.push_back({13, true, true, false, false});
  forms.push_back({18, true, false, true, false});
  forms.push_back({13, false, false, false, true});
  LnForm positive_axis;
  positive_axis.axis = 2;
  forms.push_back(positive_axis);
  LnForm rank3_gamma;
  rank3_gamma.gamma_shape = {1, 1, 16};
  forms.push_back(rank3_gamma);
  for (const LnForm& f : forms) {
    Builder b = decomposed_ln(f);
    auto e = build(b.model(), true);
    ASSERT_TRUE(e);
    EXPECT_EQ(count(*e, "LayerNormalization", ""), 1) << f.opset << f.pow << f.recip << f.gamma << f.beta;
    EXPECT_EQ(e->model().graph.nodes.size(), 1u);
    expect_equivalent(b, 1e-5);
  }
}

TEST(FuseNormLayerNorm, ConditionsBlockFusion) {
  LnForm wrong_axis;
  wrong_axis.axis = 1;
  LnForm wrong_axis18;
  wrong_axis18.opset = 18;
  wrong_axis18.axis = -2;
  LnForm eps_input;
  eps_input.eps_input = true;
  for (const LnForm& f : {wrong_axis, wrong_axis18, eps_input}) {
    Builder b = decomposed_ln(f);
    auto e = build(b.model(), true);
    EXPECT_EQ(count(*e, "LayerNormalization", ""), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // the centred value d is also a graph output
    Builder b = decomposed_ln({});
    b.output("d");
    EXPECT_EQ(count(*build(b.model(), true), "LayerNormalization", ""), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // the mean is read elsewhere
    Builder b = decomposed_ln({});
    b.node("Neg", {"m"}, {"nm"}).output("nm");
    EXPECT_EQ(count(*build(b.model(), true), "LayerNormalization", ""), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // a gamma that varies along a non-normalised axis stays a separate Mul (fuse_elementwise
     // would merge it with the Add after it: off here)
    LnForm f;
    f.gamma_shape = {5, 1};
    Builder b = decomposed_ln(f);
    auto e = build(b.model(), true, {"fuse_elementwise"});
    EXPECT_EQ(count(*e, "LayerNormalization", ""), 1);
    EXPECT_EQ(count(*e, "Mul", ""), 1);
    expect_equivalent(b, 1e-5);
  }
}

// ---------------------------------------------------------------------------------------------
// SkipLayerNorm

void add_ln(Builder& b, const std::string& in, const std::string& out, uint32_t seed) {
  b.constant("gamma" + out, random_tensor({16}, seed, 0.5f, 1.5f)).constant("beta" + out, random_tensor({16}, seed + 1));
  b.node("LayerNormalization", {in, "gamma" + out, "beta" + out}, {out}, {{"epsilon", float_attr(1e-5f)}});
}

TEST(FuseNormSkip, PostLnResidualFuses) {
  Builder b;
  b.input("x", {2, 5, 16}).input("res", {2, 5, 16});
  b.node("Add", {"x", "res"}, {"s"});
  add_ln(b, "s", "y", 3);
  b.output("y");
  auto e = build(b.model(), true);
  ASSERT_TRUE(e);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 1);
  EXPECT_EQ(e->model().graph.nodes.size(), 1u);
  EXPECT_EQ(e->model().graph.nodes[0].outputs.size(), 1u);
  expect_equivalent(b, 1e-5);
}

TEST(FuseNormSkip, PreLnKeepsTheSum) {
  // GPT-2 style: the sum feeds the LayerNorm and the next residual add.
  Builder b;
  b.input("x", {2, 5, 16}).input("res", {2, 5, 16}).input("z", {2, 5, 16});
  b.node("Add", {"res", "x"}, {"s"});
  add_ln(b, "s", "y", 3);
  b.node("Add", {"s", "z"}, {"s2"});
  add_ln(b, "s2", "y2", 5);
  b.output("y").output("y2");
  auto e = build(b.model(), true);
  ASSERT_TRUE(e);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 2);
  int with_sum = 0;
  for (const Node& n : e->model().graph.nodes) with_sum += n.outputs.size() == 2 && n.outputs[1] != kNoValue;
  EXPECT_EQ(with_sum, 1);
  expect_equivalent(b, 1e-5);
}

TEST(FuseNormSkip, SumAsGraphOutputAndBroadcastSkip) {
  Builder b;
  b.input("x", {2, 5, 16}).input("pos", {1, 5, 16});
  b.node("Add", {"x", "pos"}, {"s"});
  add_ln(b, "s", "y", 3);
  b.output("y").output("s");
  auto e = build(b.model(), true);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 1);
  expect_equivalent(b, 1e-5);
}

TEST(FuseNormSkip, AbsorbsALeftoverBias) {
  Builder b;
  b.input("a", {2, 5, 8}).input("res", {2, 5, 16});
  b.constant("w", random_tensor({8, 16}, 11)).constant("bias", random_tensor({16}, 12));
  b.node("MatMul", {"a", "w"}, {"mm"}).node("Add", {"bias", "mm"}, {"lin"}).node("Add", {"lin", "res"}, {"s"});
  add_ln(b, "s", "y", 3);
  b.output("y");
  auto e = build(b.model(), true, {"fuse_linear"});
  ASSERT_TRUE(e);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 1);
  for (const Node& n : e->model().graph.nodes)
    if (n.op_type == "SkipLayerNorm") {
      EXPECT_EQ(n.inputs.size(), 5u);
    }
  EXPECT_EQ(count(*e, "Add", ""), 0);
  expect_equivalent(b, 1e-5, {"fuse_linear"});
  // With fuse_linear on, the bias lives in the fused linear op (if that pass exists) or here.
  auto full = build(b.model(), true);
  EXPECT_EQ(count(*full, "SkipLayerNorm", "ingot"), 1);
  expect_equivalent(b, 1e-5);
}

TEST(FuseNormSkip, ConditionsBlockFusion) {
  {  // normalisation over more than the last axis
    Builder b;
    b.input("x", {2, 5, 16}).input("res", {2, 5, 16});
    b.node("Add", {"x", "res"}, {"s"});
    b.constant("g", random_tensor({5, 16}, 1));
    b.node("LayerNormalization", {"s", "g"}, {"y"}, {{"axis", int_attr(1)}});
    b.output("y");
    EXPECT_EQ(count(*build(b.model(), true), "SkipLayerNorm", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // the Mean output is read
    Builder b;
    b.input("x", {2, 5, 16}).input("res", {2, 5, 16});
    b.node("Add", {"x", "res"}, {"s"});
    b.constant("g", random_tensor({16}, 1));
    b.node("LayerNormalization", {"s", "g"}, {"y", "mean"});
    b.output("y").output("mean");
    EXPECT_EQ(count(*build(b.model(), true), "SkipLayerNorm", "ingot"), 0);
    expect_equivalent(b, 1e-5);
  }
  {  // no Add in front
    Builder b;
    b.input("x", {2, 5, 16});
    b.node("Relu", {"x"}, {"s"});
    add_ln(b, "s", "y", 1);
    b.output("y");
    EXPECT_EQ(count(*build(b.model(), true), "SkipLayerNorm", "ingot"), 0);
  }
}

TEST(FuseNormSkip, DecomposedLayerNormOnResidualFusesEndToEnd) {
  // The decomposed pattern over x = p + q: fuse_layer_norm, then fuse_skip_layer_norm.
  Builder c(13);
  c.input("p", {2, 5, 16}).input("q", {2, 5, 16}).node("Add", {"p", "q"}, {"x"});
  c.node("ReduceMean", {"x"}, {"m"}, {{"axes", ints_attr({-1})}}).node("Sub", {"x", "m"}, {"d"});
  c.node("Mul", {"d", "d"}, {"sq"}).node("ReduceMean", {"sq"}, {"v"}, {{"axes", ints_attr({-1})}});
  c.constant("eps", scalar(1e-12f)).node("Add", {"eps", "v"}, {"ve"}).node("Sqrt", {"ve"}, {"sd"});
  c.node("Div", {"d", "sd"}, {"n"});
  c.constant("gamma", random_tensor({16}, 2)).node("Mul", {"gamma", "n"}, {"g"});
  c.constant("beta", random_tensor({16}, 3)).node("Add", {"g", "beta"}, {"y"}).output("y");
  auto e = build(c.model(), true);
  ASSERT_TRUE(e);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 1);
  EXPECT_EQ(e->model().graph.nodes.size(), 1u);
  expect_equivalent(c, 1e-5);
}

TEST(FuseNormSkip, Float16MatchesUnfused) {
  Builder b;
  b.input("x", {3, 7, 32}, DType::kFloat16).input("res", {3, 7, 32}, DType::kFloat16);
  b.node("Add", {"x", "res"}, {"s"});
  Tensor g(DType::kFloat16, {32}), be(DType::kFloat16, {32});
  for (int i = 0; i < 32; ++i) {
    g.data<float16>()[i] = float16(0.5f + 0.03f * float(i));
    be.data<float16>()[i] = float16(0.1f * float(i % 5) - 0.2f);
  }
  b.constant("g", g).constant("be", be);
  b.node("LayerNormalization", {"s", "g", "be"}, {"y"});
  b.node("Add", {"s", "x"}, {"s2"});
  b.output("y").output("s2");
  auto e = build(b.model(), true);
  EXPECT_EQ(count(*e, "SkipLayerNorm", "ingot"), 1);
  expect_equivalent(b, 4e-3);  // a float16 ulp near 2..4 is 2e-3
}

TEST(FuseNormSkip, KernelRejectsBadShapes) {
  Attributes a;
  auto m = testing::single_node_model("SkipLayerNorm",
                                      {random_tensor({2, 8}, 1), random_tensor({2, 8}, 2), random_tensor({7}, 3)}, 1,
                                      a, 17, "ingot");
  auto e = Engine::from_model(m);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto out = (*e)->create_context()->run(
      {{"in0", random_tensor({2, 8}, 1)}, {"in1", random_tensor({2, 8}, 2)}, {"in2", random_tensor({7}, 3)}});
  EXPECT_FALSE(out.has_value());
  Attributes bad;
  bad.set("axis", int_attr(1));
  EXPECT_FALSE(Engine::from_model(testing::single_node_model("SkipLayerNorm",
                                                             {random_tensor({2, 8}, 1), random_tensor({2, 8}, 2),
                                                              random_tensor({8}, 3)},
                                                             1, bad, 17, "ingot"))
                   .has_value());
}

// ---------------------------------------------------------------------------------------------
// Real fixtures

struct FixtureCase {
  std::string model, exporter;
};

class FuseNormFixture : public ::testing::TestWithParam<FixtureCase> {};

int layers_of(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return -1;
  const auto& c = j["config"];
  for (const char* k : {"num_hidden_layers", "n_layers", "n_layer"})
    if (c.contains(k)) return c[k].get<int>();
  return -1;
}

TEST_P(FuseNormFixture, CountsAndMatchesPyTorch) {
  const FixtureCase& f = GetParam();
  fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model;
  const int layers = layers_of(dir);
  ASSERT_GT(layers, 0);
  auto inputs = read_npz((dir / "inputs.npz").string());
  auto reference = read_npz((dir / "reference.npz").string());
  ASSERT_TRUE(inputs.has_value() && reference.has_value());
  for (bool linear : {false, true}) {
    EngineOptions o;
    if (!linear) o.disabled_passes = {"fuse_linear"};
    auto e = Engine::from_onnx((dir / ("model." + f.exporter + ".onnx")).string(), o);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    const Engine& eng = **e;
    // GELU: one per MLP, as ingot.Gelu or folded into a FusedMatMul's activation.
    int gelu = count(eng, "Gelu", "ingot");
    for (const Node& n : eng.model().graph.nodes) {
      if (n.op_type != "FusedMatMul" || n.domain != "ingot") continue;
      std::string act = n.attrs.get_string("activation", "");
      for (char& ch : act) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      gelu += act.find("gelu") != std::string::npos;
    }
    EXPECT_EQ(gelu, layers) << "linear=" << linear;
    if (!linear) {
      EXPECT_EQ(count(eng, "Gelu", "ingot"), layers);
    }
    // Every LayerNormalization reads a sum: 2 per block plus the embeddings' (word + position
    // (+ type)) for post-LN encoders; ln_1/ln_2 per block, and ln_f, for pre-LN GPT-2.
    // (the embeddings' one becomes an ingot.EmbedLayerNorm with its lookups where they match)
    EXPECT_EQ(count(eng, "SkipLayerNorm", "ingot") + count(eng, "EmbedLayerNorm", "ingot"), 2 * layers + 1)
        << "linear=" << linear;
    EXPECT_EQ(count(eng, "LayerNormalization", ""), 0);
    EXPECT_EQ(count(eng, "Erf", "") + count(eng, "Pow", ""), 0);
    auto outs = eng.create_context()->run(*inputs);
    ASSERT_TRUE(outs.has_value()) << outs.status().message();
    for (const auto& out : *outs) {
      auto it = reference->find(out.name);
      ASSERT_NE(it, reference->end()) << out.name;
      EXPECT_LE(max_diff(out.tensor, it->second), 1e-4) << f.model << "/" << f.exporter << " " << out.name;
    }
  }
}

std::vector<FixtureCase> fixture_cases() {
  std::vector<FixtureCase> out;
  for (const char* m : {"bert", "distilbert", "roberta", "gpt2"})
    for (const char* ex : {"torchscript", "dynamo"})
      if (fs::exists(fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / m / (std::string("model.") + ex + ".onnx")))
        out.push_back({m, ex});
  return out;
}

INSTANTIATE_TEST_SUITE_P(FuseNorm, FuseNormFixture, ::testing::ValuesIn(fixture_cases()),
                         [](const ::testing::TestParamInfo<FixtureCase>& info) {
                           return info.param.model + "_" + info.param.exporter;
                         });

}  // namespace
}  // namespace ingot
