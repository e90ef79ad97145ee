// Elementwise kernels against plain references: broadcasting, dtypes, attributes, errors.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

// Index of `in` (numpy-broadcast to `out`) for flat output index i.
int64_t bcast_index(const Shape& in, const Shape& out, int64_t i) {
  int64_t idx = 0, stride = 1;
  for (int d = int(out.size()) - 1; d >= 0; --d) {
    int64_t c = i % out[size_t(d)];
    i /= out[size_t(d)];
    int id = d - int(out.size() - in.size());
    if (id >= 0) {
      if (in[size_t(id)] != 1) idx += c * stride;
      stride *= in[size_t(id)];
    }
  }
  return idx;
}

Shape bshape(const Shape& a, const Shape& b) {
  Shape o(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < o.size(); ++i) {
    int64_t da = i + a.size() >= o.size() ? a[i + a.size() - o.size()] : 1;
    int64_t db = i + b.size() >= o.size() ? b[i + b.size() - o.size()] : 1;
    o[i] = da == 1 ? db : da;
  }
  return o;
}

// Runs a node and returns the error message ("" on success).
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},       {{2, 3, 4}, {}},        {{}, {5}},
    {{2, 1, 4}, {3, 1}},    {{4, 1, 5, 1}, {3, 1, 1}}, {{1, 3, 1}, {2, 1, 6}}, {{3, 1}, {1, 7}},
    {{2, 3, 4, 5}, {3, 1, 1}}, {{0, 3}, {3}},
};

TEST(ElementwiseBinary, FloatArithmeticBroadcast) {
  const std::vector<std::pair<std::string, std::function<float(float, float)>>> ops = {
      {"Add", [](float a, float b) { return a + b; }},
      {"Sub", [](float a, float b) { return a - b; }},
      {"Mul", [](float a, float b) { return a * b; }},
      {"Div", [](float a, float b) { return a / b; }},
  };
  uint32_t seed = 1;
  for (const auto& [op, ref] : ops) {
    for (const auto& [sa, sb] : kShapePairs) {
      Tensor a = random_tensor(sa, seed++), b = random_tensor(sb, seed++, 0.5f, 2.f);
      auto out = run_single_node(op, {a, b}, 1);
      ASSERT_EQ(out.size(), 1u);
      Shape so = bshape(sa, sb);
      ASSERT_EQ(out[0].shape(), so) << op;
      for (int64_t i = 0; i < out[0].numel(); ++i) {
        float want = ref(a.data<float>()[bcast_index(sa, so, i)], b.data<float>()[bcast_index(sb, so, i)]);
        ASSERT_FLOAT_EQ(out[0].data<float>()[i], want) << op << " " << shape_str(sa) << " " << shape_str(sb);
      }
    }
  }
}

TEST(ElementwiseBinary, LargeParallelBiasAdd) {
  Tensor a = random_tensor({64, 128, 48}, 7), b = random_tensor({48}, 8);
  auto out = run_single_node("Add", {a, b}, 1);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(out[0].data<float>()[i], a.data<float>()[i] + b.data<float>()[i % 48]);
  Tensor c = random_tensor({64, 1, 48}, 9);
  out = run_single_node("Mul", {a, c}, 1);
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(out[0].data<float>()[i], a.data<float>()[i] * c.data<float>()[(i / (128 * 48)) * 48 + i % 48]);
}

TEST(ElementwiseBinary, IntegerDivModNeverCrash) {
  const int32_t mn = std::numeric_limits<int32_t>::min();
  Tensor a = make<int32_t>({6}, {7, -7, 7, -7, mn, 5});
  Tensor b = make<int32_t>({6}, {2, 2, -2, 0, -1, 0});
  auto d = run_single_node("Div", {a, b}, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(values<int32_t>(d[0]), (std::vector<int32_t>{3, -3, -3, 0, mn, 0}));
  auto m = run_single_node("Mod", {a, b}, 1);
  EXPECT_EQ(values<int32_t>(m[0]), (std::vector<int32_t>{1, 1, -1, 0, 0, 0}));
  Attributes f;
  f.set("fmod", int_attr(1));
  auto fm = run_single_node("Mod", {a, b}, 1, f);
  EXPECT_EQ(values<int32_t>(fm[0]), (std::vector<int32_t>{1, -1, 1, 0, 0, 0}));
  Tensor x = make<float>({4}, {5.5f, -5.5f, 5.5f, -5.5f}), y = make<float>({4}, {2, 2, -2, -2});
  auto ff = run_single_node("Mod", {x, y}, 1, f);
  EXPECT_EQ(values<float>(ff[0]), (std::vector<float>{1.5f, -1.5f, 1.5f, -1.5f}));
  Tensor u = make<uint8_t>({3}, {200, 9, 1}), v = make<uint8_t>({3}, {0, 4, 3});
  EXPECT_EQ(values<uint8_t>(run_single_node("Div", {u, v}, 1)[0]), (std::vector<uint8_t>{0, 2, 0}));
  EXPECT_EQ(values<uint8_t>(run_single_node("Add", {u, u}, 1)[0]), (std::vector<uint8_t>{144, 18, 2}));
}

TEST(ElementwiseBinary, PowTypes) {
  Tensor a = make<int64_t>({5}, {2, 3, -2, 1, 0});
  Tensor e = make<int64_t>({5}, {10, 3, 3, -4, 0});
  EXPECT_EQ(values<int64_t>(run_single_node("Pow", {a, e}, 1)[0]), (std::vector<int64_t>{1024, 27, -8, 1, 1}));
  Tensor f = make<float>({3}, {2.f, 0.5f, -3.f});
  Tensor ei = make<int32_t>({3}, {3, -2, 2});
  EXPECT_EQ(values<float>(run_single_node("Pow", {f, ei}, 1)[0]), (std::vector<float>{8.f, 4.f, 9.f}));
  Tensor ef = make<float>({3}, {0.5f, 2.f, 1.5f});
  Tensor b = make<int32_t>({3}, {9, 3, 4});
  EXPECT_EQ(values<int32_t>(run_single_node("Pow", {b, ef}, 1)[0]), (std::vector<int32_t>{3, 9, 8}));
  Tensor r = random_tensor({1000}, 3);
  auto sq = run_single_node("Pow", {r, make<float>({}, {2.f})}, 1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sq[0].data<float>()[i], r.data<float>()[i] * r.data<float>()[i]);
}

TEST(ElementwiseBinary, ComparisonsLogicalBitShift) {
  Tensor a = make<int64_t>({2, 3}, {1, 5, 3, -2, 0, 9});
  Tensor b = make<int64_t>({3}, {1, 2, 9});
  auto eq = run_single_node("Equal", {a, b}, 1);
  ASSERT_EQ(eq[0].dtype(), DType::kBool);
  EXPECT_EQ(values<bool>(eq[0]), (std::vector<bool>{true, false, false, false, false, true}));
  EXPECT_EQ(values<bool>(run_single_node("Less", {a, b}, 1)[0]),
            (std::vector<bool>{false, false, true, true, true, false}));
  EXPECT_EQ(values<bool>(run_single_node("GreaterOrEqual", {a, b}, 1)[0]),
            (std::vector<bool>{true, true, false, false, false, true}));
  Tensor p = make<bool>({4}, {true, true, false, false}), q = make<bool>({4}, {true, false, true, false});
  EXPECT_EQ(values<bool>(run_single_node("Xor", {p, q}, 1)[0]), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values<bool>(run_single_node("And", {p, q}, 1)[0]), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(run_single_node("Not", {p}, 1)[0]), (std::vector<bool>{false, false, true, true}));
  Attributes left;
  left.set("direction", string_attr("LEFT"));
  Tensor x = make<uint32_t>({3}, {1, 3, 5}), s = make<uint32_t>({3}, {4, 31, 40});
  EXPECT_EQ(values<uint32_t>(run_single_node("BitShift", {x, s}, 1, left)[0]),
            (std::vector<uint32_t>{16, 0x80000000u, 0}));
}

// Opset 18's bitwise ops: every integer type, broadcasting, the result in the operands' type.
TEST(ElementwiseBinary, BitwiseOps) {
  Tensor a = make<int8_t>({2, 2}, {int8_t(-1), 0x0f, 0x55, int8_t(-128)}), b = make<int8_t>({2}, {0x33, int8_t(-16)});
  EXPECT_EQ(values<int8_t>(run_single_node("BitwiseAnd", {a, b}, 1, {}, 18)[0]),
            (std::vector<int8_t>{0x33, 0x00, 0x11, int8_t(-128)}));
  EXPECT_EQ(values<int8_t>(run_single_node("BitwiseOr", {a, b}, 1, {}, 18)[0]),
            (std::vector<int8_t>{int8_t(-1), int8_t(-1), 0x77, int8_t(-16)}));
  EXPECT_EQ(values<int8_t>(run_single_node("BitwiseXor", {a, b}, 1, {}, 18)[0]),
            (std::vector<int8_t>{int8_t(0xcc), int8_t(-1), 0x66, 0x70}));
  EXPECT_EQ(values<int8_t>(run_single_node("BitwiseNot", {a}, 1, {}, 18)[0]),
            (std::vector<int8_t>{0, int8_t(0xf0), int8_t(0xaa), 0x7f}));
  Tensor u = make<uint16_t>({3}, {0xffff, 0x1234, 0}), v = make<uint16_t>({}, {0x00ff});
  EXPECT_EQ(values<uint16_t>(run_single_node("BitwiseAnd", {u, v}, 1, {}, 18)[0]), (std::vector<uint16_t>{0x00ff, 0x0034, 0}));
  EXPECT_EQ(values<uint16_t>(run_single_node("BitwiseNot", {u}, 1, {}, 18)[0]), (std::vector<uint16_t>{0, 0xedcb, 0xffff}));
  Tensor l = make<int64_t>({2}, {int64_t(1) << 62, -1}), r = make<int64_t>({2}, {-1, int64_t(1) << 40});
  EXPECT_EQ(values<int64_t>(run_single_node("BitwiseXor", {l, r}, 1, {}, 18)[0]),
            (std::vector<int64_t>{~(int64_t(1) << 62), ~(int64_t(1) << 40)}));
  // Floats and bools are refused, naming the input and what it takes.
  std::string m = run_error("BitwiseOr", {random_tensor({2}, 1), random_tensor({2}, 2)}, 1, {}, 18);
  EXPECT_NE(m.find("input 0 (A) has dtype float32, expected an integer type"), std::string::npos) << m;
  m = run_error("BitwiseNot", {make<bool>({1}, {true})}, 1, {}, 18);
  EXPECT_NE(m.find("has dtype bool, expected an integer type"), std::string::npos) << m;
}

TEST(ElementwiseBinary, WhereBroadcast) {
  Tensor c = make<bool>({2, 1}, {true, false});
  Tensor x = random_tensor({3}, 4), y = random_tensor({2, 3}, 5);
  auto out = run_single_node("Where", {c, x, y}, 1);
  ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[0].data<float>()[i], i < 3 ? x.data<float>()[i] : y.data<float>()[i]);
  Tensor c2 = make<bool>({4}, {true, false, false, true});
  Tensor xi = make<int64_t>({}, {7}), yi = make<int64_t>({4}, {1, 2, 3, 4});
  EXPECT_EQ(values<int64_t>(run_single_node("Where", {c2, xi, yi}, 1)[0]), (std::vector<int64_t>{7, 2, 3, 7}));
}

TEST(ElementwiseBinary, PRelu) {
  Tensor x = random_tensor({2, 3, 4}, 6), s = random_tensor({3, 1}, 7);
  auto out = run_single_node("PRelu", {x, s}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data<float>()[i], sl = s.data<float>()[(i / 4) % 3];
    ASSERT_EQ(out[0].data<float>()[i], v < 0 ? v * sl : v);
  }
  // Opset 6: a 1-D slope of size C applies along axis 1.
  Tensor s1 = random_tensor({3}, 8);
  auto o6 = run_single_node("PRelu", {x, s1}, 1, {}, 6);
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data<float>()[i], sl = s1.data<float>()[(i / 4) % 3];
    ASSERT_EQ(o6[0].data<float>()[i], v < 0 ? v * sl : v);
  }
}

TEST(ElementwiseUnary, FloatOpsMatchReference) {
  const std::vector<std::pair<std::string, std::function<double(double)>>> ops = {
      {"Exp", [](double x) { return std::exp(x); }},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Softplus", [](double x) { return std::log1p(std::exp(x)); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Elu", [](double x) { return x < 0 ? std::expm1(x) : x; }},
      {"Mish", [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"HardSwish", [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }},
      {"Gelu", [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }},
  };
  Tensor x = random_tensor({50000}, 11, -80.f, 80.f);
  for (int i = 0; i < 100; ++i) x.data<float>()[i] = (i - 50) * 1e-4f;  // near zero
  for (const auto& [op, ref] : ops) {
    auto out = run_single_node(op, {x}, 1, {}, 20);
    ASSERT_EQ(out.size(), 1u) << op;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double want = ref(x.data<float>()[i]), got = out[0].data<float>()[i];
      ASSERT_NEAR(got, want, (op == "HardSwish" ? 1e-6 : 1e-30) + (op == "Gelu" ? 2e-5 : 2e-6) * std::fabs(want)) << op << " at x=" << x.data<float>()[i];
    }
  }
  Tensor special = make<float>({4}, {std::nanf(""), 100.f, -100.f, 0.f});
  auto e = run_single_node("Exp", {special}, 1);
  EXPECT_TRUE(std::isnan(e[0].data<float>()[0]));
  EXPECT_TRUE(std::isinf(e[0].data<float>()[1]));
  EXPECT_EQ(e[0].data<float>()[2], 0.f);
  EXPECT_EQ(e[0].data<float>()[3], 1.f);
}

TEST(ElementwiseUnary, GeluTanhAndAttributes) {
  Tensor x = random_tensor({4096}, 12, -8.f, 8.f);
  Attributes a;
  a.set("approximate", string_attr("tanh"));
  auto out = run_single_node("Gelu", {x}, 1, a, 20);
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.data<float>()[i];
    double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    ASSERT_NEAR(out[0].data<float>()[i], want, 1e-6 + 1e-5 * std::fabs(want)) << v;
  }
  Attributes alpha;
  alpha.set("alpha", float_attr(0.5f));
  Tensor y = make<float>({3}, {-2.f, 0.25f, 3.f});
  EXPECT_EQ(values<float>(run_single_node("LeakyRelu", {y}, 1, alpha)[0]), (std::vector<float>{-1.f, 0.25f, 3.f}));
  EXPECT_EQ(values<float>(run_single_node("ThresholdedRelu", {y}, 1, alpha)[0]), (std::vector<float>{0.f, 0.f, 3.f}));
  Attributes bad;
  bad.set("approximate", string_attr("fast"));
  std::string m = run_error("Gelu", {y}, 1, bad, 20);
  EXPECT_NE(m.find("'approximate'"), std::string::npos) << m;
}

TEST(ElementwiseUnary, RoundSignAbsNegInts) {
  Tensor r = make<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f});
  EXPECT_EQ(values<float>(run_single_node("Round", {r}, 1)[0]), (std::vector<float>{0, 2, 2, -0.f, -2, 3}));
  Tensor i = make<int8_t>({4}, {-128, -3, 0, 5});
  EXPECT_EQ(values<int8_t>(run_single_node("Abs", {i}, 1)[0]), (std::vector<int8_t>{-128, 3, 0, 5}));
  EXPECT_EQ(values<int8_t>(run_single_node("Neg", {i}, 1)[0]), (std::vector<int8_t>{-128, 3, 0, -5}));
  EXPECT_EQ(values<int8_t>(run_single_node("Sign", {i}, 1)[0]), (std::vector<int8_t>{-1, -1, 0, 1}));
  EXPECT_EQ(values<int8_t>(run_single_node("Relu", {i}, 1)[0]), (std::vector<int8_t>{0, 0, 0, 5}));
  Tensor h(DType::kFloat16, {3});
  h.data<float16>()[0] = float16(-2.f);
  h.data<float16>()[1] = float16(0.25f);
  h.data<float16>()[2] = float16(4.f);
  auto sq = run_single_node("Sqrt", {h}, 1);
  ASSERT_EQ(sq[0].dtype(), DType::kFloat16);
  EXPECT_TRUE(std::isnan(float(sq[0].data<float16>()[0])));
  EXPECT_EQ(float(sq[0].data<float16>()[1]), 0.5f);
  EXPECT_EQ(float(sq[0].data<float16>()[2]), 2.f);
}

TEST(ElementwiseUnary, ClipAllOpsets) {
  Tensor x = make<int32_t>({5}, {-10, -1, 0, 3, 99});
  auto o = run_single_node("Clip", {x, make<int32_t>({}, {-2}), make<int32_t>({}, {5})}, 1, {}, 13);
  EXPECT_EQ(values<int32_t>(o[0]), (std::vector<int32_t>{-2, -1, 0, 3, 5}));
  Tensor f = make<float>({3}, {-3.f, 0.2f, 7.f});
  Attributes a;
  a.set("min", float_attr(-1.f));
  a.set("max", float_attr(1.f));
  EXPECT_EQ(values<float>(run_single_node("Clip", {f}, 1, a, 6)[0]), (std::vector<float>{-1.f, 0.2f, 1.f}));
  EXPECT_EQ(values<float>(run_single_node("Clip", {f}, 1, {}, 13)[0]), (std::vector<float>{-3.f, 0.2f, 7.f}));
  Attributes pos;
  pos.set("detect_negative", int_attr(0));
  Tensor inf = make<float>({3}, {INFINITY, -INFINITY, 1.f});
  EXPECT_EQ(values<bool>(run_single_node("IsInf", {inf}, 1, pos)[0]), (std::vector<bool>{true, false, false}));
}

TEST(ElementwiseVariadic, MinMaxSumMean) {
  Tensor a = random_tensor({2, 3}, 21), b = random_tensor({3}, 22), c = random_tensor({2, 1}, 23);
  auto mx = run_single_node("Max", {a, b, c}, 1);
  auto mean = run_single_node("Mean", {a, b, c}, 1);
  ASSERT_EQ(mx[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) {
    float va = a.data<float>()[i], vb = b.data<float>()[i % 3], vc = c.data<float>()[i / 3];
    EXPECT_EQ(mx[0].data<float>()[i], std::max({va, vb, vc}));
    EXPECT_NEAR(mean[0].data<float>()[i], (va + vb + vc) / 3, 1e-6);
  }
  Tensor i1 = make<uint16_t>({3}, {1, 500, 7}), i2 = make<uint16_t>({}, {8});
  EXPECT_EQ(values<uint16_t>(run_single_node("Min", {i1, i2}, 1)[0]), (std::vector<uint16_t>{1, 8, 7}));
  EXPECT_EQ(values<float>(run_single_node("Sum", {b}, 1)[0]), values<float>(b));
}

TEST(ElementwiseCast, Conversions) {
  Tensor f = make<float>({6}, {1.9f, -1.9f, std::nanf(""), 0.f, 300.f, -0.5f});
  Attributes to;
  to.set("to", int_attr(int64_t(DType::kInt32)));
  EXPECT_EQ(values<int32_t>(run_single_node("Cast", {f}, 1, to)[0]), (std::vector<int32_t>{1, -1, 0, 0, 300, 0}));
  to.set("to", int_attr(int64_t(DType::kBool)));
  EXPECT_EQ(values<bool>(run_single_node("Cast", {f}, 1, to)[0]),
            (std::vector<bool>{true, true, true, false, true, true}));
  to.set("to", int_attr(int64_t(DType::kFloat16)));
  auto h = run_single_node("Cast", {f}, 1, to);
  ASSERT_EQ(h[0].dtype(), DType::kFloat16);
  EXPECT_EQ(float(h[0].data<float16>()[4]), 300.f);
  to.set("to", int_attr(int64_t(DType::kFloat64)));
  auto d = run_single_node("Cast", {h[0]}, 1, to);
  EXPECT_EQ(d[0].data<double>()[5], -0.5);
  Tensor b = make<bool>({2}, {true, false});
  auto like = run_single_node("CastLike", {b, make<int64_t>({1}, {0})}, 1);
  EXPECT_EQ(values<int64_t>(like[0]), (std::vector<int64_t>{1, 0}));
}

// float32 -> bfloat16 rounds to nearest, ties to even (ONNX's helper, ONNX Runtime and PyTorch do;
// ONNX 1.12's test_cast_FLOAT_to_BFLOAT16 expects truncation, so the conformance runner skips it).
TEST(ElementwiseCast, FloatToBfloat16RoundsToNearestEven) {
  auto bits_of = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  // Upper halves 0x3F80 (1.0) and 0x3F81: below half-way, half-way to even (down), above half-way;
  // half-way from odd 0x3F81 rounds up to 0x3F82; the largest finite float rounds to +inf; NaN stays NaN.
  Tensor f = make<float>({8}, {bits_of(0x3F807FFFu), bits_of(0x3F808000u), bits_of(0x3F808001u), bits_of(0x3F818000u),
                               bits_of(0x7F7FFFFFu), -std::numeric_limits<float>::infinity(), std::nanf(""),
                               0.4799f});
  Attributes to;
  to.set("to", int_attr(int64_t(DType::kBFloat16)));
  auto out = run_single_node("Cast", {f}, 1, to);
  ASSERT_EQ(out[0].dtype(), DType::kBFloat16);
  const bfloat16* b = out[0].data<bfloat16>();
  EXPECT_EQ(b[0].bits, 0x3F80);
  EXPECT_EQ(b[1].bits, 0x3F80);
  EXPECT_EQ(b[2].bits, 0x3F81);
  EXPECT_EQ(b[3].bits, 0x3F82);
  EXPECT_EQ(b[4].bits, 0x7F80);
  EXPECT_EQ(b[5].bits, 0xFF80);
  EXPECT_TRUE(std::isnan(float(b[6])));
  EXPECT_EQ(float(b[7]), 0.48046875f);  // truncation would give 0.478515625
}

TEST(ElementwiseErrors, BadInputs) {
  Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4}, 2);
  std::string m = run_error("Add", {a, b}, 1);
  EXPECT_NE(m.find("cannot be broadcast"), std::string::npos) << m;
  EXPECT_NE(m.find("(Add)"), std::string::npos) << m;
  m = run_error("Mul", {a, make<int64_t>({3}, {1, 2, 3})}, 1);
  EXPECT_NE(m.find("input 1 (B) has dtype int64, expected float32"), std::string::npos) << m;
  m = run_error("Sqrt", {make<int32_t>({1}, {4})}, 1);
  EXPECT_NE(m.find("input 0 (X) has dtype int32"), std::string::npos) << m;
  m = run_error("And", {a, a}, 1);
  EXPECT_NE(m.find("expected bool"), std::string::npos) << m;
  Attributes dir;
  dir.set("direction", string_attr("UP"));
  m = run_error("BitShift", {make<uint8_t>({1}, {1}), make<uint8_t>({1}, {1})}, 1, dir);
  EXPECT_NE(m.find("'direction'"), std::string::npos) << m;
  Attributes to;
  to.set("to", int_attr(8));
  m = run_error("Cast", {a}, 1, to);
  EXPECT_NE(m.find("string"), std::string::npos) << m;
  m = run_error("Cast", {a}, 1);
  EXPECT_NE(m.find("'to' is required"), std::string::npos) << m;
  m = run_error("Where", {a, a, a}, 1);
  EXPECT_NE(m.find("input 0 (condition) has dtype float32, expected bool"), std::string::npos) << m;
  m = run_error("Clip", {a, make<float>({2}, {0, 1})}, 1, {}, 13);
  EXPECT_NE(m.find("must be a scalar"), std::string::npos) << m;
  m = run_error("PRelu", {b, a}, 1);
  EXPECT_NE(m.find("does not broadcast"), std::string::npos) << m;
  m = run_error("Max", {a, make<double>({1}, {1.0})}, 1);
  EXPECT_NE(m.find("input 1 has dtype float64, expected float32"), std::string::npos) << m;
  Attributes fm;
  fm.set("fmod", int_attr(3));
  m = run_error("Mod", {a, a}, 1, fm);
  EXPECT_NE(m.find("'fmod'"), std::string::npos) << m;
}

}  // namespace
}  // namespace ingot::testing
