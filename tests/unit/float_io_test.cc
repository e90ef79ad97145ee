// --io-precision fp16 (passes/float_io.h): the float32 inputs and outputs become float16 with
// Casts at the boundary and nothing else changed; in an fp16 engine the Casts go and the output's
// producer writes it (eliminate_identity); a bf16 engine keeps the output's producer in float32;
// values read inside a subgraph are refused; the engine file keeps what was retyped; the engine's
// results are the float32 engine's rounded once to float16.
#include <gtest/gtest.h>

#include <filesystem>

#include "../ops/graph_builder.h"
#include "../ops/op_test_util.h"
#include "passes/convert_precision.h"
#include "passes/float_io.h"
#include "pass_test_util.h"

namespace ingot {
namespace {

using namespace ingot::testing;

const Node* producer_of(const Model& m, const std::string& value) {
  const ValueId v = m.graph.find(value);
  for (const Node& n : m.graph.nodes)
    for (ValueId o : n.outputs)
      if (o == v) return &n;
  return nullptr;
}

std::vector<const Node*> readers_of(const Model& m, const std::string& value) {
  const ValueId v = m.graph.find(value);
  std::vector<const Node*> r;
  for (const Node& n : m.graph.nodes)
    for (ValueId i : n.inputs)
      if (i == v) {
        r.push_back(&n);
        break;
      }
  return r;
}

DType dtype_of(const Model& m, const std::string& value) { return m.graph.value(m.graph.find(value)).dtype; }

// x (float32) -> Relu -> y (output, also read by Neg -> z, an output); ids (int64) -> Shape -> s
// (output); x is also read by Sigmoid -> q (output).
Model small_model() {
  GraphBuilder b("test:float_io");
  const ValueId x = b.input("x", DType::kFloat32, {2, 3});
  const ValueId ids = b.input("ids", DType::kInt64, {2});
  const ValueId y = b.node("Relu", {x}, "y");
  const ValueId z = b.node("Neg", {y}, "z");
  const ValueId q = b.node("Sigmoid", {x}, "q");
  const ValueId s = b.node("Shape", {ids}, "s");
  for (ValueId v : {y, z, q}) b.m.graph.value(v).dtype = DType::kFloat32;
  b.m.graph.value(s).dtype = DType::kInt64;
  for (ValueId v : {y, z, q, s}) b.output(v);
  return b.m;
}

TEST(FloatIo, FloatInputsAndOutputsBecomeFloat16WithCastsAtTheBoundary) {
  Model m = small_model();
  auto r = retype_float_io(m, DType::kFloat16);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(r->outputs, (std::vector<std::string>{"y", "z", "q"}));
  for (const char* v : {"x", "y", "z", "q"}) EXPECT_EQ(dtype_of(m, v), DType::kFloat16) << v;
  EXPECT_EQ(dtype_of(m, "ids"), DType::kInt64);
  EXPECT_EQ(dtype_of(m, "s"), DType::kInt64);
  // x has one reader, its Cast to float32, which both old readers read.
  auto x_readers = readers_of(m, "x");
  ASSERT_EQ(x_readers.size(), 1u);
  EXPECT_EQ(x_readers[0]->op_type, "Cast");
  EXPECT_EQ(x_readers[0]->attrs.get_int("to", -1), int64_t(DType::kFloat32));
  const std::string wide = m.graph.value(x_readers[0]->outputs[0]).name;
  EXPECT_EQ(readers_of(m, wide).size(), 2u);
  // y is a Cast of the Relu's float32 result, which the Neg still reads.
  const Node* y = producer_of(m, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op_type, "Cast");
  EXPECT_EQ(y->attrs.get_int("to", -1), int64_t(DType::kFloat16));
  const std::string relu_out = m.graph.value(y->inputs[0]).name;
  EXPECT_EQ(producer_of(m, relu_out)->op_type, "Relu");
  EXPECT_EQ(dtype_of(m, relu_out), DType::kFloat32);
  auto relu_readers = readers_of(m, relu_out);
  EXPECT_EQ(relu_readers.size(), 2u);  // the output's Cast and the Neg
  // The nodes are in order: every input is produced before it is read.
  std::set<ValueId> ready(m.graph.inputs.begin(), m.graph.inputs.end());
  for (const Node& n : m.graph.nodes) {
    for (ValueId i : n.inputs) EXPECT_TRUE(ready.count(i) || m.graph.initializers.count(i)) << n.name;
    for (ValueId o : n.outputs) ready.insert(o);
  }
}

TEST(FloatIo, ModelRunsAsBeforeRoundedOnceAtTheOutputs) {
  const Model m = small_model();
  Tensor x = random_tensor({2, 3}, 5), ids(DType::kInt64, {2});
  ids.data<int64_t>()[0] = ids.data<int64_t>()[1] = 1;
  auto ref = Engine::from_model(m);
  ASSERT_TRUE(ref.has_value()) << ref.status().message();
  auto want = (*ref)->create_context()->run({{"x", x}, {"ids", ids}});
  ASSERT_TRUE(want.has_value()) << want.status().message();
  EngineOptions o;
  o.io_precision = "fp16";
  auto e = Engine::from_model(m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  // What the engine takes is x rounded to float16; the reference gets the same values.
  Tensor x16(DType::kFloat16, x.shape()), x_back(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    x16.data<float16>()[i] = float16(x.data<float>()[i]);
    x_back.data<float>()[i] = float(x16.data<float16>()[i]);
  }
  want = (*ref)->create_context()->run({{"x", x_back}, {"ids", ids}});
  ASSERT_TRUE(want.has_value());
  auto got = (*e)->create_context()->run({{"x", x16}, {"ids", ids}});
  ASSERT_TRUE(got.has_value()) << got.status().message();
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < got->size(); ++k) {
    const Tensor& g = (*got)[k].tensor;
    const Tensor& w = (*want)[k].tensor;
    if (w.dtype() == DType::kInt64) {
      EXPECT_EQ(g.dtype(), DType::kInt64);
      continue;
    }
    ASSERT_EQ(g.dtype(), DType::kFloat16) << (*got)[k].name;
    for (int64_t i = 0; i < w.numel(); ++i)
      EXPECT_EQ(float(g.data<float16>()[i]), float(float16(w.data<float>()[i]))) << (*got)[k].name << " " << i;
  }
  // A float32 x is refused, naming the option.
  auto wrong = (*e)->create_context()->run({{"x", x}, {"ids", ids}});
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.status().message().find("'x' has dtype float32, expected float16 (the engine was built with "
                                          "--io-precision fp16)"),
            std::string::npos)
      << wrong.status().message();
  EXPECT_EQ((*e)->inputs()[0].model_dtype, DType::kFloat32);
  EXPECT_EQ((*e)->inputs()[1].model_dtype, DType::kInt64);
}

TEST(FloatIo, InputPassedThroughAndConstantOutputs) {
  GraphBuilder b("test:float_io");
  const ValueId x = b.input("x", DType::kFloat32, {4});
  const ValueId c = b.constant("c", random_tensor({4}, 2));
  const ValueId sum = b.node("Add", {x, c}, "sum");
  b.m.graph.value(sum).dtype = DType::kFloat32;
  b.output(x);    // an input that is also an output
  b.output(c);    // a constant output, also read by the Add
  b.output(sum);
  Model m = b.m;
  auto r = retype_float_io(m, DType::kFloat16);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->outputs, (std::vector<std::string>{"c", "sum"}));  // x retyped as an input
  EXPECT_EQ(dtype_of(m, "x"), DType::kFloat16);
  EXPECT_EQ(dtype_of(m, "c"), DType::kFloat16);
  EXPECT_EQ(producer_of(m, "c")->op_type, "Cast");
  EXPECT_FALSE(m.graph.initializers.count(m.graph.find("c")));
  EngineOptions o;
  o.io_precision = "fp16";
  auto e = Engine::from_model(b.m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  Tensor x16(DType::kFloat16, {4});
  for (int i = 0; i < 4; ++i) x16.data<float16>()[i] = float16(0.5f * float(i));
  auto out = (*e)->create_context()->run({{"x", x16}});
  ASSERT_TRUE(out.has_value()) << out.status().message();
  const Tensor& cw = b.m.graph.initializers.at(b.m.graph.find("c"));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(float((*out)[0].tensor.data<float16>()[i]), 0.5f * float(i));
    EXPECT_EQ(float((*out)[1].tensor.data<float16>()[i]), float(float16(cw.data<float>()[i])));
  }
}

TEST(FloatIo, ValueReadInsideASubgraphIsRefused) {
  GraphBuilder b("test:float_io");
  const ValueId x = b.input("x", DType::kFloat32, {1});
  const ValueId cond = b.input("cond", DType::kBool, {});
  auto body = std::make_shared<Graph>();
  const ValueId captured = body->intern("x");
  body->value(captured).dtype = DType::kFloat32;
  body->captures.push_back(captured);
  Node id;
  id.op_type = "Identity";
  id.inputs = {captured};
  id.outputs = {body->intern("then_out")};
  body->nodes.push_back(id);
  body->outputs.push_back(id.outputs[0]);
  Attributes a;
  Attribute g;
  g.kind = Attribute::Kind::kGraph;
  g.g = body;
  a.set("then_branch", g);
  a.set("else_branch", g);
  const ValueId y = b.node("If", {cond}, "y", a);
  b.m.graph.value(y).dtype = DType::kFloat32;
  b.output(y);
  (void)x;
  auto r = retype_float_io(b.m, DType::kFloat16);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("'x' is read by name inside a subgraph"), std::string::npos)
      << r.status().message();
}

TEST(FloatIo, OutputThatNothingComputesIsRefusedBeforeAnyEdit) {
  GraphBuilder b("test:float_io");
  b.input("x", DType::kFloat32, {2});
  const ValueId orphan = b.m.graph.intern("orphan");
  b.m.graph.value(orphan).dtype = DType::kFloat32;
  b.output(orphan);
  Model m = b.m;
  auto r = retype_float_io(m, DType::kFloat16);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("output 'orphan' is neither computed by a node nor a constant"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(dtype_of(m, "x"), DType::kFloat32);  // nothing edited
  EXPECT_TRUE(m.graph.nodes.empty());
}

// An output computed in half precision: the boundary Casts go and the product writes the output.
TEST(FloatIo, HalfEngineWritesTheOutputFromItsProducer) {
  auto f = load_fixture_files("gpt2", "torchscript");
  ASSERT_TRUE(f.has_value()) << f.status().message();
  EngineOptions o;
  o.precision = "fp16";
  o.io_precision = "fp16";
  auto e = Engine::from_model(f->model, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const Node* logits = producer_of((*e)->model(), "logits");
  ASSERT_NE(logits, nullptr);
  EXPECT_NE(logits->op_type, "Cast");
  EXPECT_NE(logits->op_type, "Identity");
  EXPECT_EQ(dtype_of((*e)->model(), "logits"), DType::kFloat16);
  EXPECT_EQ((*e)->outputs()[0].model_dtype, DType::kFloat32);
  // Against the fp16 engine with float32 outputs: the same half-precision logits.
  EngineOptions plain;
  plain.precision = "fp16";
  auto p = Engine::from_model(f->model, plain);
  ASSERT_TRUE(p.has_value()) << p.status().message();
  auto got = (*e)->create_context()->run(f->inputs);
  auto want = (*p)->create_context()->run(f->inputs);
  ASSERT_TRUE(got.has_value()) << got.status().message();
  ASSERT_TRUE(want.has_value()) << want.status().message();
  const Tensor& g = (*got)[0].tensor;
  const Tensor& w = (*want)[0].tensor;
  ASSERT_EQ(g.dtype(), DType::kFloat16);
  ASSERT_EQ(g.shape(), w.shape());
  double worst = 0;
  for (int64_t i = 0; i < w.numel(); ++i)
    worst = std::max(worst, std::abs(double(float(g.data<float16>()[i])) - w.scalar_as_double(i)));
  EXPECT_LE(worst, 1e-2);
}

// bfloat16 cannot hold logits to 1e-2: a bf16 engine keeps the output's producer in float32
// behind the output's Cast to float16, as it does without the option.
TEST(FloatIo, Bf16OutputProducerStaysFloat32BehindTheCast) {
  GraphBuilder b("test:float_io");
  const ValueId x = b.input("x", DType::kFloat32, {3, 16});
  const ValueId w = b.constant("W", random_tensor({16, 5}, 1));
  const ValueId h = b.node("Tanh", {b.node("MatMul", {x, w}, "xw")}, "h");
  const ValueId y = b.node("MatMul", {h, b.constant("W2", random_tensor({5, 7}, 2))}, "y");
  b.m.graph.value(y).dtype = DType::kFloat32;
  b.output(y);
  Model m = b.m;
  ASSERT_TRUE(retype_float_io(m, DType::kFloat16).has_value());
  PrecisionOptions po;
  po.target = DType::kBFloat16;
  po.keep_output_producers_fp32 = true;
  auto n = convert_float_precision(m, po);
  ASSERT_TRUE(n.has_value()) << n.status().message();
  const Node* cast = producer_of(m, "y");
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->op_type, "Cast");
  const std::string product = m.graph.value(cast->inputs[0]).name;
  EXPECT_EQ(producer_of(m, product)->op_type, "MatMul");
  EXPECT_EQ(dtype_of(m, product), DType::kFloat32);
  EXPECT_EQ(dtype_of(m, "xw"), DType::kBFloat16);  // the rest is converted
}

TEST(FloatIo, EngineFileKeepsWhatWasRetyped) {
  const Model m = small_model();
  EngineOptions o;
  o.io_precision = "fp16";
  auto e = Engine::from_model(m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  const std::string path = (std::filesystem::temp_directory_path() / "ingot_float_io_test.ingot").string();
  ASSERT_TRUE((*e)->save(path).is_ok());
  auto l = Engine::load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(l.has_value()) << l.status().message();
  EXPECT_EQ((*l)->options().io_precision, "fp16");
  EXPECT_EQ((*l)->options().retyped_io.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ((*l)->options().retyped_io.outputs, (std::vector<std::string>{"y", "z", "q"}));
  for (const IoInfo& io : (*l)->outputs())
    EXPECT_EQ(io.model_dtype, io.name == "s" ? DType::kInt64 : DType::kFloat32) << io.name;
  EXPECT_EQ((*l)->inputs()[0].dtype, DType::kFloat16);
}

TEST(FloatIo, UnknownIoPrecisionIsRefused) {
  EngineOptions o;
  o.io_precision = "fp8";
  auto e = Engine::from_model(small_model(), o);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("unknown io precision 'fp8' (expected model or fp16)"), std::string::npos);
}

// A graph output written by an Identity of a value nothing else reads: the producer writes the
// output itself; with another reader the Identity stays.
TEST(EliminateIdentity, OutputIdentityIsAbsorbedByItsProducer) {
  for (bool other_reader : {false, true}) {
    GraphBuilder b("test:eliminate_identity");
    const ValueId x = b.input("x", DType::kFloat32, {4});
    const ValueId t = b.node("Relu", {x}, "t");
    const ValueId y = b.node("Identity", {t}, "y");
    b.output(y);
    if (other_reader) b.output(b.node("Neg", {t}, "n"));
    auto [m, rewrites] = optimized_both_stages(b.m, "cpu", "eliminate_identity");
    const Node* p = producer_of(m, "y");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->op_type, other_reader ? "Identity" : "Relu") << other_reader;
    EXPECT_EQ(rewrites, other_reader ? 0 : 1);
    EXPECT_EQ(m.graph.value(m.graph.outputs[0]).name, "y");
  }
}

}  // namespace
}  // namespace ingot
