// convert_precision: hand-built graphs check the structure (where Casts go, which values and
// initializers change dtype, what stays float32, that the interface is unchanged) and that the
// converted model runs on the CPU within half precision's error of the float32 run; the real
// fixtures are converted after the optimizer and run where the CPU kernels take half inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "../ops/op_test_util.h"
#include "io/npy.h"
#include "onnx_import/import.h"
#include "passes/convert_precision.h"
#include "passes/pass.h"

namespace ingot {
namespace {

using namespace ingot::testing;
namespace fs = std::filesystem;

struct Builder {
  Model m;
  Builder() {
    m.path = "test:convert_precision";
    m.ir_version = 8;
    m.opsets[""] = 17;
  }
  // Dims < 0 are symbolic ("d0", "d1", ...).
  ValueId input(const std::string& name, const Shape& shape, DType dtype = DType::kFloat32) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = dtype;
    SymShape s;
    for (size_t i = 0; i < shape.size(); ++i)
      s.push_back(shape[i] >= 0 ? Dim{shape[i], {}} : Dim{-1, "d" + std::to_string(i)});
    m.graph.value(id).shape = s;
    m.graph.inputs.push_back(id);
    return id;
  }
  ValueId constant(const std::string& name, Tensor t) {
    ValueId id = m.graph.intern(name);
    m.graph.value(id).dtype = t.dtype();
    m.graph.initializers[id] = std::move(t);
    return id;
  }
  ValueId node(const std::string& op, std::vector<ValueId> ins, const std::string& out, Attributes attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = out + "_node";
    n.inputs = std::move(ins);
    ValueId o = m.graph.intern(out);
    n.outputs = {o};
    n.attrs = std::move(attrs);
    m.graph.nodes.push_back(std::move(n));
    return o;
  }
  void output(ValueId v) { m.graph.outputs.push_back(v); }
};

Attributes attrs(std::initializer_list<std::pair<std::string, Attribute>> l) {
  Attributes a;
  for (auto& [k, v] : l) a.set(k, v);
  return a;
}

Tensor scalar(float v) {
  Tensor t(DType::kFloat32, {});
  t.data<float>()[0] = v;
  return t;
}

const Node* producer_of(const Model& m, const std::string& value) {
  ValueId v = m.graph.find(value);
  for (const Node& n : m.graph.nodes)
    for (ValueId o : n.outputs)
      if (o == v) return &n;
  return nullptr;
}

std::vector<const Node*> nodes_of(const Model& m, const std::string& op) {
  std::vector<const Node*> r;
  for (const Node& n : m.graph.nodes)
    if (n.op_type == op) r.push_back(&n);
  return r;
}

DType dtype_of_value(const Model& m, ValueId v) {
  auto it = m.graph.initializers.find(v);
  return it != m.graph.initializers.end() ? it->second.dtype() : m.graph.value(v).dtype;
}

struct Io {
  std::string name;
  DType dtype;
};
std::vector<Io> interface(const Model& m, const std::vector<ValueId>& ids) {
  std::vector<Io> r;
  for (ValueId v : ids) r.push_back({m.graph.value(v).name, m.graph.value(v).dtype});
  return r;
}
void expect_same_interface(const Model& a, const Model& b) {
  auto ia = interface(a, a.graph.inputs), ib = interface(b, b.graph.inputs);
  auto oa = interface(a, a.graph.outputs), ob = interface(b, b.graph.outputs);
  ASSERT_EQ(ia.size(), ib.size());
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t i = 0; i < ia.size(); ++i) {
    EXPECT_EQ(ia[i].name, ib[i].name);
    EXPECT_EQ(ia[i].dtype, ib[i].dtype) << ia[i].name;
  }
  for (size_t i = 0; i < oa.size(); ++i) {
    EXPECT_EQ(oa[i].name, ob[i].name);
    EXPECT_EQ(oa[i].dtype, ob[i].dtype) << oa[i].name;
  }
}

Expected<std::map<std::string, Tensor>> run(Model m, const std::map<std::string, Tensor>& feeds) {
  auto e = Engine::from_model(std::move(m));
  if (!e) return e.status();
  auto out = (*e)->create_context()->run(feeds);
  if (!out) return out.status();
  std::map<std::string, Tensor> r;
  for (auto& nt : *out) r[nt.name] = nt.tensor;
  return r;
}

double max_err(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return 1e300;
  double m = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = std::fabs(got.scalar_as_double(i) - want.scalar_as_double(i));
    if (std::isnan(d)) return 1e300;
    m = std::max(m, d);
  }
  return m;
}

// Converts a copy of `m`, runs both on the CPU, expects float32 outputs within `tol`.
Model convert_and_compare(const Model& m, const std::map<std::string, Tensor>& feeds, DType target, double tol,
                          std::set<std::string> keep = {}) {
  Model half = m;
  PrecisionOptions o;
  o.target = target;
  o.keep_fp32_ops = std::move(keep);
  auto n = convert_float_precision(half, o);
  EXPECT_TRUE(n.has_value()) << n.status().message();
  expect_same_interface(m, half);
  auto want = run(m, feeds);
  EXPECT_TRUE(want.has_value()) << want.status().message();
  auto got = run(half, feeds);
  EXPECT_TRUE(got.has_value()) << got.status().message();
  if (want && got) {
    for (const auto& [name, t] : *want) {
      EXPECT_TRUE(got->count(name)) << name;
      if (!got->count(name)) continue;
      EXPECT_EQ(got->at(name).dtype(), t.dtype()) << name;
      EXPECT_LE(max_err(got->at(name), t), tol) << name << " (" << dtype_name(target) << ")";
    }
  }
  return half;
}

// x[2,8] -> MatMul(W[8,4]) -> Add(b[4]) -> Relu -> y
Builder mlp() {
  Builder b;
  ValueId x = b.input("x", {2, 8});
  ValueId w = b.constant("W", random_tensor({8, 4}, 1));
  ValueId bias = b.constant("b", random_tensor({4}, 2));
  ValueId mm = b.node("MatMul", {x, w}, "mm");
  ValueId add = b.node("Add", {mm, bias}, "add");
  b.output(b.node("Relu", {add}, "y"));
  return b;
}

TEST(ConvertPrecision, MatMulAddRelu) {
  Builder b = mlp();
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  EXPECT_EQ(*n, 6);  // x (cast), W, b (in place), mm, add, y (renamed + cast back)
  expect_same_interface(b.m, half);
  const Graph& g = half.graph;
  // W and b are read only in half: converted in place, same names.
  EXPECT_EQ(dtype_of_value(half, g.find("W")), DType::kFloat16);
  EXPECT_EQ(dtype_of_value(half, g.find("b")), DType::kFloat16);
  EXPECT_EQ(g.value(g.find("mm")).dtype, DType::kFloat16);
  EXPECT_EQ(g.value(g.find("add")).dtype, DType::kFloat16);
  // One Cast after x, one before y.
  auto casts = nodes_of(half, "Cast");
  ASSERT_EQ(casts.size(), 2u);
  const Node* mm = producer_of(half, "mm");
  ASSERT_NE(mm, nullptr);
  const Node* xcast = producer_of(half, g.value(mm->inputs[0]).name);
  ASSERT_NE(xcast, nullptr);
  EXPECT_EQ(xcast->op_type, "Cast");
  EXPECT_EQ(xcast->inputs[0], g.find("x"));
  EXPECT_EQ(xcast->attrs.get_int("to", 0), int64_t(DType::kFloat16));
  const Node* ycast = producer_of(half, "y");
  ASSERT_NE(ycast, nullptr);
  EXPECT_EQ(ycast->op_type, "Cast");
  EXPECT_EQ(ycast->attrs.get_int("to", 0), int64_t(DType::kFloat32));
  EXPECT_EQ(producer_of(half, g.value(ycast->inputs[0]).name)->op_type, "Relu");
  EXPECT_EQ(g.value(ycast->inputs[0]).dtype, DType::kFloat16);

  std::map<std::string, Tensor> feeds{{"x", random_tensor({2, 8}, 3)}};
  convert_and_compare(b.m, feeds, DType::kFloat16, 1e-2);
  convert_and_compare(b.m, feeds, DType::kBFloat16, 3e-2);
}

TEST(ConvertPrecision, Softmax) {
  Builder b;
  ValueId x = b.input("x", {-1, 16});
  ValueId w = b.constant("W", random_tensor({16, 10}, 4));
  ValueId mm = b.node("MatMul", {x, w}, "logits");
  b.output(b.node("Softmax", {mm}, "probs", attrs({{"axis", int_attr(-1)}})));
  std::map<std::string, Tensor> feeds{{"x", random_tensor({3, 16}, 5, -2.f, 2.f)}};
  Model half = convert_and_compare(b.m, feeds, DType::kFloat16, 1e-2);
  const Node* sm = producer_of(half, half.graph.value(producer_of(half, "probs")->inputs[0]).name);
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->op_type, "Softmax");
  EXPECT_EQ(half.graph.value(sm->inputs[0]).dtype, DType::kFloat16);
  convert_and_compare(b.m, feeds, DType::kBFloat16, 2e-2);
}

// The exporters' attention mask: scores + (1 - m) * finfo(float32).min, and a Where filling
// masked scores with the same constant. In fp16 the constant must saturate to -65504, else the
// unmasked positions compute 0 * -inf = NaN.
TEST(ConvertPrecision, WhereMaskConstantIsClamped) {
  Builder b;
  ValueId x = b.input("scores", {2, 6});
  ValueId m = b.input("mask", {2, 6});       // 1 = attend, 0 = masked
  ValueId keep = b.input("keep", {2, 6}, DType::kBool);
  ValueId one = b.constant("one", scalar(1.f));
  ValueId fmin = b.constant("fmin", scalar(-3.4028234663852886e38f));
  ValueId fill = b.constant("fill", scalar(-3.4028234663852886e38f));
  ValueId inv = b.node("Sub", {one, m}, "inv");
  ValueId add_mask = b.node("Mul", {inv, fmin}, "add_mask");
  ValueId masked = b.node("Add", {x, add_mask}, "masked");
  ValueId filled = b.node("Where", {keep, masked, fill}, "filled");
  b.output(b.node("Softmax", {filled}, "probs", attrs({{"axis", int_attr(-1)}})));

  Tensor mask(DType::kFloat32, {2, 6}), keep_t(DType::kBool, {2, 6});
  for (int i = 0; i < 12; ++i) {
    mask.data<float>()[i] = (i % 6) < 4 ? 1.f : 0.f;
    keep_t.data<bool>()[i] = (i % 6) != 1;
  }
  std::map<std::string, Tensor> feeds{{"scores", random_tensor({2, 6}, 6, -3.f, 3.f)}, {"mask", mask}, {"keep", keep_t}};
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Model half = convert_and_compare(b.m, feeds, t, t == DType::kFloat16 ? 1e-2 : 2e-2);
    const Graph& g = half.graph;
    for (const char* name : {"fmin", "fill"}) {
      auto it = g.initializers.find(g.find(name));
      ASSERT_NE(it, g.initializers.end()) << name;
      ASSERT_EQ(it->second.dtype(), t);
      double v = it->second.scalar_as_double(0);
      EXPECT_TRUE(std::isfinite(v)) << name << " became " << v;
      EXPECT_LT(v, t == DType::kFloat16 ? -65000. : -3.3e38) << name;
    }
    const Node* where = producer_of(half, "filled");
    ASSERT_NE(where, nullptr);
    EXPECT_EQ(where->inputs[0], g.find("keep"));  // the bool condition is untouched
  }
}

// Cast(int64 -> FLOAT) inside the graph becomes Cast(int64 -> target) and reads the int input
// directly; a Cast(FLOAT16) -> Cast(FLOAT) round trip the exporter left disappears.
TEST(ConvertPrecision, CastToFloatInside) {
  Builder b;
  ValueId ids = b.input("ids", {2, 3}, DType::kInt64);
  ValueId x = b.input("x", {2, 3});
  ValueId f = b.node("Cast", {ids}, "ids_f", attrs({{"to", int_attr(int64_t(DType::kFloat32))}}));
  ValueId mul = b.node("Mul", {f, x}, "mul");
  ValueId h = b.node("Cast", {mul}, "mul_h", attrs({{"to", int_attr(int64_t(DType::kFloat16))}}));
  ValueId back = b.node("Cast", {h}, "mul_f", attrs({{"to", int_attr(int64_t(DType::kFloat32))}}));
  b.output(b.node("Relu", {back}, "y"));
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  const Graph& g = half.graph;
  const Node* c = producer_of(half, "ids_f");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->op_type, "Cast");
  EXPECT_EQ(c->inputs[0], g.find("ids"));
  EXPECT_EQ(c->attrs.get_int("to", 0), int64_t(DType::kFloat16));
  EXPECT_EQ(g.value(g.find("ids_f")).dtype, DType::kFloat16);
  // Casts left: x -> fp16, ids -> fp16, Mul's fp16 output -> FLOAT16 (a no-op the exporter
  // wrote, bypassed), ... -> y in float32. The FLOAT16/FLOAT pair is gone.
  int to_f32 = 0;
  for (const Node* cn : nodes_of(half, "Cast")) {
    EXPECT_NE(g.value(cn->inputs[0]).dtype, DType(cn->attrs.get_int("to", 0))) << cn->name << " is a no-op";
    to_f32 += cn->attrs.get_int("to", 0) == int64_t(DType::kFloat32);
  }
  EXPECT_EQ(to_f32, 1);  // only the output's
  EXPECT_EQ(nodes_of(half, "Cast").size(), 3u);
  Tensor idt(DType::kInt64, {2, 3});
  for (int i = 0; i < 6; ++i) idt.data<int64_t>()[i] = i - 2;
  convert_and_compare(b.m, {{"ids", idt}, {"x", random_tensor({2, 3}, 7)}}, DType::kFloat16, 1e-2);
  convert_and_compare(b.m, {{"ids", idt}, {"x", random_tensor({2, 3}, 7)}}, DType::kBFloat16, 2e-2);
}

// A position table built from the input's length: Shape -> Gather -> Cast(FLOAT) -> Range.
// Range stays float32, and so does the Cast feeding it (shape arithmetic); its output meets the
// half data through one Cast.
TEST(ConvertPrecision, RangeOnFloatsStaysFp32) {
  Builder b;
  ValueId x = b.input("x", {2, -1});
  ValueId shape = b.node("Shape", {x}, "shape");
  Tensor idx(DType::kInt64, {});
  idx.data<int64_t>()[0] = 1;
  ValueId len = b.node("Gather", {shape, b.constant("one_idx", idx)}, "len", attrs({{"axis", int_attr(0)}}));
  ValueId lenf = b.node("Cast", {len}, "len_f", attrs({{"to", int_attr(int64_t(DType::kFloat32))}}));
  ValueId half_len = b.node("Div", {lenf, b.constant("two", scalar(2.f))}, "half_len");
  ValueId pos = b.node("Range", {b.constant("start", scalar(0.f)), half_len, b.constant("delta", scalar(0.5f))}, "pos");
  b.output(b.node("Add", {x, pos}, "y"));
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  const Graph& g = half.graph;
  const Node* range = producer_of(half, "pos");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->op_type, "Range");
  for (ValueId in : range->inputs) EXPECT_EQ(dtype_of_value(half, in), DType::kFloat32) << g.value(in).name;
  EXPECT_EQ(g.value(g.find("pos")).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(g.find("half_len")).dtype, DType::kFloat32);
  EXPECT_EQ(producer_of(half, "len_f")->attrs.get_int("to", 0), int64_t(DType::kFloat32));
  const Node* add = nullptr;
  for (const Node* a : nodes_of(half, "Add")) add = a;
  ASSERT_NE(add, nullptr);
  const Node* pcast = producer_of(half, g.value(add->inputs[1]).name);
  ASSERT_NE(pcast, nullptr);
  EXPECT_EQ(pcast->op_type, "Cast");
  EXPECT_EQ(pcast->inputs[0], g.find("pos"));
  Tensor xin = random_tensor({2, 6}, 8);
  convert_and_compare(b.m, {{"x", xin}}, DType::kFloat16, 1e-2);
  // Other lengths than the probe's: the shape chain was not folded at conversion time.
  convert_and_compare(b.m, {{"x", random_tensor({2, 40}, 9)}}, DType::kFloat16, 1e-2);
}

// Input and output names and dtypes are the user's contract; an output that is also read inside
// (a residual) keeps its name in float32 while the half readers read the half value.
TEST(ConvertPrecision, InterfaceNamesAndDtypesUnchanged) {
  Builder b;
  ValueId x = b.input("x", {2, 4});
  ValueId ids = b.input("ids", {2}, DType::kInt64);
  ValueId h = b.node("Tanh", {x}, "hidden");
  ValueId y = b.node("Mul", {h, b.constant("s", scalar(3.f))}, "y");
  b.output(h);
  b.output(y);
  b.output(b.node("Identity", {ids}, "ids_out"));
  b.output(x);  // an input passed straight through
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  expect_same_interface(b.m, half);
  const Graph& g = half.graph;
  const Node* hc = producer_of(half, "hidden");
  ASSERT_NE(hc, nullptr);
  EXPECT_EQ(hc->op_type, "Cast");  // written from the half Tanh output
  const Node* mul = producer_of(half, g.value(producer_of(half, "y")->inputs[0]).name);
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op_type, "Mul");
  EXPECT_EQ(mul->inputs[0], hc->inputs[0]);  // Mul reads the half Tanh output, not a round trip
  Tensor idt(DType::kInt64, {2});
  convert_and_compare(b.m, {{"x", random_tensor({2, 4}, 10)}, {"ids", idt}}, DType::kFloat16, 1e-2);
}

// An initializer read by a half node and by a float32 node keeps its float32 self and gets a
// half copy; one read only in half is converted in place.
TEST(ConvertPrecision, SharedInitializerGetsHalfCopy) {
  Builder b;
  ValueId x = b.input("x", {2, 5});
  ValueId c = b.constant("c", random_tensor({2, 5}, 11));
  ValueId only = b.constant("only_half", random_tensor({2, 5}, 12));
  ValueId sum = b.node("Add", {x, c}, "sum");
  ValueId cs = b.node("CumSum", {c, b.constant("axis", [] {
                                   Tensor t(DType::kInt64, {});
                                   t.data<int64_t>()[0] = 1;
                                   return t;
                                 }())},
                      "csum");
  ValueId y = b.node("Mul", {sum, only}, "prod");
  b.output(b.node("Add", {y, cs}, "y"));
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  const Graph& g = half.graph;
  EXPECT_EQ(dtype_of_value(half, g.find("c")), DType::kFloat32);
  EXPECT_EQ(dtype_of_value(half, g.find("only_half")), DType::kFloat16);
  const Node* cum = producer_of(half, "csum");
  ASSERT_NE(cum, nullptr);
  EXPECT_EQ(cum->op_type, "CumSum");
  EXPECT_EQ(cum->inputs[0], g.find("c"));
  EXPECT_EQ(g.value(g.find("csum")).dtype, DType::kFloat32);
  const Node* add = producer_of(half, "sum");
  ASSERT_NE(add, nullptr);
  ValueId copy = add->inputs[1];
  EXPECT_NE(copy, g.find("c"));
  EXPECT_TRUE(g.initializers.count(copy));
  EXPECT_EQ(dtype_of_value(half, copy), DType::kFloat16);
  EXPECT_EQ(g.value(g.find("sum")).dtype, DType::kFloat16);
  convert_and_compare(b.m, {{"x", random_tensor({2, 5}, 13)}}, DType::kFloat16, 1e-2);
}

TEST(ConvertPrecision, KeepFp32OpsOption) {
  Builder b = mlp();
  for (const char* key : {"Relu", ":Relu", "ai.onnx:Relu"}) {
    Model half = b.m;
    auto n = convert_float_precision(half, {DType::kFloat16, {key}});
    ASSERT_TRUE(n.has_value()) << n.status().message();
    const Node* relu = producer_of(half, "y");
    ASSERT_NE(relu, nullptr);
    EXPECT_EQ(relu->op_type, "Relu") << key;  // float32 output written directly
    EXPECT_EQ(half.graph.value(relu->inputs[0]).dtype, DType::kFloat32) << key;
  }
  Model other = b.m;  // another domain's Relu: no match
  ASSERT_TRUE(convert_float_precision(other, {DType::kFloat16, {"ingot:Relu"}}).has_value());
  EXPECT_EQ(producer_of(other, "y")->op_type, "Cast");
  convert_and_compare(b.m, {{"x", random_tensor({2, 8}, 14)}}, DType::kFloat16, 1e-2, {"Add"});
}

TEST(ConvertPrecision, ConstantOfShapeValueConverted) {
  Builder b;
  ValueId x = b.input("x", {2, 3});
  ValueId s = b.node("Shape", {x}, "s");
  Tensor v(DType::kFloat32, {1});
  v.data<float>()[0] = 0.25f;
  Attribute va;
  va.kind = Attribute::Kind::kTensor;
  va.t = v;
  ValueId fill = b.node("ConstantOfShape", {s}, "fill", attrs({{"value", va}}));
  b.output(b.node("Add", {x, fill}, "y"));
  Model half = convert_and_compare(b.m, {{"x", random_tensor({2, 3}, 15)}}, DType::kFloat16, 1e-2);
  const Node* cos = producer_of(half, "fill");
  ASSERT_NE(cos, nullptr);
  ASSERT_NE(cos->attrs.get_tensor("value"), nullptr);
  EXPECT_EQ(cos->attrs.get_tensor("value")->dtype(), DType::kFloat16);
}

// If/Loop bodies stay float32: a value a body captures by name keeps its name in float32 (a
// Cast writes it from the half producer) and the If's outputs meet half readers through Casts.
TEST(ConvertPrecision, SubgraphStaysFp32WithCastsAtTheNode) {
  auto branch = [](const std::string& op, const std::string& out) {
    auto g = std::make_shared<Graph>();
    g->name = out;
    ValueId cap = g->intern("h");
    g->captures.push_back(cap);
    ValueId o = g->intern(out);
    g->value(o).dtype = DType::kFloat32;
    Node n;
    n.op_type = op;
    n.name = out + "_node";
    n.inputs = {cap};
    n.outputs = {o};
    g->nodes.push_back(std::move(n));
    g->outputs.push_back(o);
    return g;
  };
  Builder b;
  ValueId x = b.input("x", {2, 3});
  ValueId cond = b.input("cond", {}, DType::kBool);
  ValueId h = b.node("Tanh", {x}, "h");
  Attribute then_b, else_b;
  then_b.kind = else_b.kind = Attribute::Kind::kGraph;
  then_b.g = branch("Neg", "then_out");
  else_b.g = branch("Identity", "else_out");
  ValueId r = b.node("If", {cond}, "r", attrs({{"then_branch", then_b}, {"else_branch", else_b}}));
  b.output(b.node("Mul", {r, h}, "y"));
  Model half = b.m;
  auto n = convert_float_precision(half, {DType::kFloat16, {}});
  ASSERT_TRUE(n.has_value()) << n.status().message();
  const Graph& g = half.graph;
  const Node* hc = producer_of(half, "h");
  ASSERT_NE(hc, nullptr);
  EXPECT_EQ(hc->op_type, "Cast");  // the body reads "h" by name, in float32
  EXPECT_EQ(g.value(g.find("h")).dtype, DType::kFloat32);
  EXPECT_EQ(g.value(g.find("r")).dtype, DType::kFloat32);
  const Node* mul = producer_of(half, g.value(producer_of(half, "y")->inputs[0]).name);
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->op_type, "Mul");
  EXPECT_EQ(producer_of(half, g.value(mul->inputs[0]).name)->op_type, "Cast");  // Cast(r)
  EXPECT_EQ(mul->inputs[1], hc->inputs[0]);  // the half Tanh output
  for (bool c : {true, false}) {
    Tensor ct(DType::kBool, {});
    ct.data<bool>()[0] = c;
    convert_and_compare(b.m, {{"x", random_tensor({2, 3}, 16)}, {"cond", ct}}, DType::kFloat16, 1e-2);
  }
}

TEST(ConvertPrecision, RejectsOtherTargets) {
  Builder b = mlp();
  auto n = convert_float_precision(b.m, {DType::kFloat64, {}});
  ASSERT_FALSE(n.has_value());
  EXPECT_NE(n.status().message().find("float16 or bfloat16"), std::string::npos);
}

// ---- the real fixtures, after the optimizer ----

struct Fixture {
  std::string model, exporter;
};

std::vector<Fixture> fixtures() {
  std::vector<Fixture> out;
  fs::path root = fs::path(INGOT_SOURCE_DIR) / "tests" / "models";
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    for (const char* ex : {"torchscript", "dynamo"})
      if (fs::exists(d.path() / (std::string("model.") + ex + ".onnx"))) out.push_back({d.path().filename(), ex});
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) { return a.model + a.exporter < b.model + b.exporter; });
  return out;
}

// The ingot.* fused ops whose CPU kernels take float32 only; fixtures keep them in float32 so
// the rest of the converted graph can run on the CPU.
const std::set<std::string> kCpuFp32Only = {"ingot:FusedMatMul"};

TEST(ConvertPrecision, Fixtures) {
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.model + "/" + f.exporter);
    fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model;
    auto m = load_onnx((dir / ("model." + f.exporter + ".onnx")).string());
    ASSERT_TRUE(m.has_value()) << m.status().message();
    auto inputs = read_npz((dir / "inputs.npz").string());
    ASSERT_TRUE(inputs.has_value()) << inputs.status().message();
    auto reference = read_npz((dir / "reference.npz").string());
    ASSERT_TRUE(reference.has_value()) << reference.status().message();
    OptimizeOptions oo;
    ShapeBinding shapes;
    for (const auto& [name, t] : *inputs) shapes[name] = t.shape();
    oo.bindings.push_back(shapes);
    ASSERT_TRUE(optimize(*m, oo).has_value());

    for (DType target : {DType::kFloat16, DType::kBFloat16}) {
      for (bool keep_cpu_fp32_only : {false, true}) {
        Model half = *m;
        PrecisionOptions po{target, keep_cpu_fp32_only ? kCpuFp32Only : std::set<std::string>{}};
        auto n = convert_float_precision(half, po);
        ASSERT_TRUE(n.has_value()) << n.status().message();
        EXPECT_GT(*n, 0);
        expect_same_interface(*m, half);
        // Every converted float value feeds or comes from a node that runs in half; no value
        // is left float32 between two half nodes except through a Cast.
        int half_values = 0, casts = 0;
        for (const ValueInfo& v : half.graph.values) half_values += v.dtype == target;
        EXPECT_GT(half_values, 0);
        // Transformers and CNNs keep nothing in float32 by themselves: past the input Casts,
        // no node but the Casts reads a float32 value (FusedMatMul where it is kept).
        for (const Node& node : half.graph.nodes) {
          casts += node.op_type == "Cast";
          if (node.op_type == "Cast" || (keep_cpu_fp32_only && node.op_type == "FusedMatMul")) continue;
          for (ValueId in : node.inputs)
            if (in != kNoValue)
              EXPECT_NE(dtype_of_value(half, in), DType::kFloat32)
                  << node.name << " (" << node.op_type << ") reads float32 " << half.graph.value(in).name;
        }
        std::printf("[ convert ] %s/%s %s: %d values converted, %d Casts, %zu nodes\n", f.model.c_str(),
                    f.exporter.c_str(), dtype_name(target).c_str(), *n, casts, half.graph.nodes.size());
        EngineOptions eo;
        eo.optimize = false;  // optimized before conversion, as engine.cc will
        auto e = Engine::from_model(std::move(half), eo);
        std::string what = dtype_name(target) + (keep_cpu_fp32_only ? " keeping FusedMatMul fp32" : " full");
        if (!e) {
          std::printf("[ convert ] %s/%s %s: does not run on the CPU: %s\n", f.model.c_str(), f.exporter.c_str(),
                      what.c_str(), e.status().message().c_str());
          EXPECT_FALSE(keep_cpu_fp32_only) << e.status().message();
          continue;
        }
        auto outs = (*e)->create_context()->run(*inputs);
        if (!outs) {
          std::printf("[ convert ] %s/%s %s: run failed: %s\n", f.model.c_str(), f.exporter.c_str(), what.c_str(),
                      outs.status().message().c_str());
          EXPECT_FALSE(keep_cpu_fp32_only) << outs.status().message();
          continue;
        }
        for (const auto& out : *outs) {
          auto it = reference->find(out.name);
          ASSERT_NE(it, reference->end()) << out.name;
          double scale = 0;
          for (int64_t i = 0; i < it->second.numel(); ++i) scale = std::max(scale, std::fabs(it->second.scalar_as_double(i)));
          double err = max_err(out.tensor, it->second);
          std::printf("[ convert ] %s/%s %s: output %s max abs err %.3g (max |ref| %.3g)\n", f.model.c_str(),
                      f.exporter.c_str(), what.c_str(), out.name.c_str(), err, scale);
          EXPECT_EQ(out.tensor.dtype(), it->second.dtype()) << out.name;
          double tol = (target == DType::kFloat16 ? 2e-2 : 1e-1) * std::max(1.0, scale);
          EXPECT_LE(err, tol) << out.name << " " << what;
        }
      }
    }
  }
}

// bf16 engines keep the nodes that write graph outputs, and the pooling/reshaping that feeds
// them, in float32 (engine.cc sets keep_output_producers_fp32): every fixture's outputs are
// then within 1e-2 of PyTorch's, as the CUDA backend promises for bf16 logits.
TEST(ConvertPrecision, BFloat16HeadInFloat32MeetsLogitTolerance) {
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.model + "/" + f.exporter);
    fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model;
    auto m = load_onnx((dir / ("model." + f.exporter + ".onnx")).string());
    ASSERT_TRUE(m.has_value());
    auto inputs = read_npz((dir / "inputs.npz").string());
    auto reference = read_npz((dir / "reference.npz").string());
    ASSERT_TRUE(inputs.has_value() && reference.has_value());
    OptimizeOptions oo;
    ShapeBinding shapes;
    for (const auto& [name, t] : *inputs) shapes[name] = t.shape();
    oo.bindings.push_back(shapes);
    ASSERT_TRUE(optimize(*m, oo).has_value());
    PrecisionOptions po;
    po.target = DType::kBFloat16;
    po.keep_output_producers_fp32 = true;
    ASSERT_TRUE(convert_float_precision(*m, po).has_value());
    EngineOptions eo;
    eo.optimize = false;
    auto e = Engine::from_model(std::move(*m), eo);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    auto outs = (*e)->create_context()->run(*inputs);
    ASSERT_TRUE(outs.has_value()) << outs.status().message();
    for (const auto& out : *outs) {
      double err = max_err(out.tensor, reference->at(out.name));
      std::printf("[ bf16 head ] %s/%s %s: max abs err %.3g\n", f.model.c_str(), f.exporter.c_str(), out.name.c_str(), err);
      EXPECT_LE(err, 1e-2) << out.name;
    }
  }
}

}  // namespace
}  // namespace ingot
