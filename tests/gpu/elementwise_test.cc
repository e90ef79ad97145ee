// CUDA elementwise kernels against the CPU kernels: binary ops with every broadcast path
// (same shape, scalar, row, general, odd lengths), comparisons and logic, Where, PRelu,
// variadic ops, unary math and activations, Clip, and Cast across a matrix of dtype pairs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gpu_test_util.h"
#include "ir/dispatch.h"

namespace ingot::testing {
namespace {

// Random tensor of any storable dtype: floats uniform in [lo, hi), integers rounded.
Tensor rand_of(DType dt, const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor f = random_tensor(shape, seed, float(lo), float(hi));
  Tensor t(dt, shape);
  dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = f.data<float>()[i];
      if constexpr (std::is_same_v<T, bool>) p[i] = v > 0.5 * (lo + hi);
      else if constexpr (std::is_integral_v<T>) p[i] = T(std::lround(v));
      else p[i] = T(v);
    }
  });
  return t;
}

std::map<std::string, Tensor> feeds_of(const std::vector<Tensor>& ins) {
  std::map<std::string, Tensor> f;
  for (size_t i = 0; i < ins.size(); ++i) f["in" + std::to_string(i)] = ins[i];
  return f;
}

void check(const std::string& op, const std::vector<Tensor>& ins, double atol, double rtol, const std::string& what,
           Attributes attrs = {}, int opset = 17) {
  expect_cuda_matches_cpu(single_node_model(op, ins, 1, std::move(attrs), opset), feeds_of(ins), atol, rtol,
                          op + " " + what);
}

Attributes attrs_of(std::initializer_list<std::pair<const char*, Attribute>> list) {
  Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

std::string label(DType dt, const Shape& a, const Shape& b) {
  return dtype_name(dt) + " " + shape_str(a) + " with " + shape_str(b);
}

// Shape pairs that take every path: same shape (vectorised, odd length with a tail), scalar
// operands on either side, row broadcast, general broadcast, broadcast on both sides.
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{3, 5, 7}, {3, 5, 7}},     {{4099}, {4099}},       {{}, {37}},           {{37}, {}},
    {{1, 1}, {2, 33}},          {{4, 3, 64}, {64}},     {{6, 130}, {130}},    {{2, 1, 5}, {3, 1}},
    {{2, 3, 1, 8}, {1, 3, 7, 1}}, {{8, 1, 4}, {8, 16, 4}}, {{5, 1}, {1, 1, 1}},
};

// ---------------------------------------------------------------------------------------
TEST(GpuElementwise, ArithmeticFloat32AllShapes) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const auto& [sa, sb] : kShapePairs) {
    Tensor a = rand_of(DType::kFloat32, sa, seed++, -3, 3);
    Tensor b = rand_of(DType::kFloat32, sb, seed++, -3, 3);
    Tensor pos = rand_of(DType::kFloat32, sb, seed++, 0.5, 2);    // divisor away from zero
    Tensor neg = rand_of(DType::kFloat32, sb, seed++, -2, -0.5);  // divisor of the other sign
    Tensor base = rand_of(DType::kFloat32, sa, seed++, 0.5, 2);   // Pow's base in its domain
    const std::string what = label(DType::kFloat32, sa, sb);
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"}) check(op, {a, b}, 0, 0, what);
    check("Div", {a, pos}, 0, 0, what);
    for (int64_t fmod : {0, 1}) {
      Attributes m = attrs_of({{"fmod", int_attr(fmod)}});
      check("Mod", {a, pos}, 1e-6, 1e-6, what + " fmod " + std::to_string(fmod), m);
      check("Mod", {a, neg}, 1e-6, 1e-6, what + " negative divisor, fmod " + std::to_string(fmod), m);
    }
    check("Pow", {base, b}, 1e-6, 1e-6, what);
  }
}

TEST(GpuElementwise, ArithmeticHalfTypes) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 100;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (const auto& [sa, sb] : kShapePairs) {
      Tensor a = rand_of(dt, sa, seed++, -3, 3);
      Tensor b = rand_of(dt, sb, seed++, -3, 3);
      Tensor pos = rand_of(dt, sb, seed++, 0.5, 2);
      Tensor base = rand_of(dt, sa, seed++, 0.5, 2);
      const std::string what = label(dt, sa, sb);
      for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"}) check(op, {a, b}, 1e-3, 1e-2, what);
      check("Div", {a, pos}, 1e-3, 1e-2, what);
      check("Mod", {a, pos}, 1e-3, 1e-2, what);
      check("Pow", {base, b}, 1e-3, 1e-2, what);
    }
  }
}

TEST(GpuElementwise, ArithmeticFloat64) {
  INGOT_REQUIRE_GPU();
  Tensor a = rand_of(DType::kFloat64, {2, 1, 5}, 7, -3, 3);
  Tensor b = rand_of(DType::kFloat64, {3, 1}, 8, 0.5, 2);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Mod"}) check(op, {a, b}, 1e-12, 1e-12, "float64");
  check("Pow", {b, a}, 1e-12, 1e-12, "float64");
}

// Integer rules: division and mod by zero give 0, mod follows the divisor's sign unless
// fmod, arithmetic wraps, negative powers truncate.
TEST(GpuElementwise, ArithmeticIntegers) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 200;
  for (DType dt : {DType::kInt64, DType::kInt32, DType::kInt16, DType::kInt8}) {
    for (const auto& [sa, sb] : kShapePairs) {
      Tensor a = rand_of(dt, sa, seed++, -120, 120);
      Tensor b = rand_of(dt, sb, seed++, -9, 9);  // zeros and -1 included
      Tensor e = rand_of(dt, sb, seed++, -3, 6);
      const std::string what = label(dt, sa, sb);
      for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) check(op, {a, b}, 0, 0, what);
      check("Mod", {a, b}, 0, 0, what);
      check("Mod", {a, b}, 0, 0, what + " fmod", attrs_of({{"fmod", int_attr(1)}}));
      check("Pow", {a, e}, 0, 0, what);
    }
  }
  for (DType dt : {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    Tensor a = rand_of(dt, {4, 3, 64}, seed++, 0, 250);
    Tensor b = rand_of(dt, {64}, seed++, 0, 9);
    const std::string what = label(dt, {4, 3, 64}, {64});
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Pow"}) check(op, {a, b}, 0, 0, what);
    for (const char* dir : {"LEFT", "RIGHT"})
      check("BitShift", {a, b}, 0, 0, what + " " + dir, attrs_of({{"direction", string_attr(dir)}}));
  }
}

// Pow with an exponent of another dtype (converted in the workspace) and x ** 2.
TEST(GpuElementwise, PowMixedDtypes) {
  INGOT_REQUIRE_GPU();
  Tensor xf = rand_of(DType::kFloat32, {3, 17}, 300, 0.5, 2);
  Tensor xh = rand_of(DType::kFloat16, {3, 17}, 301, 0.5, 2);
  Tensor xi = rand_of(DType::kInt64, {3, 17}, 302, -5, 5);
  Tensor ei = rand_of(DType::kInt32, {17}, 303, -2, 4);
  Tensor ef = rand_of(DType::kFloat32, {17}, 304, -2, 3);
  Tensor ed = rand_of(DType::kFloat64, {3, 1}, 305, -2, 3);
  Tensor two(DType::kFloat32, {});
  two.data<float>()[0] = 2.f;
  check("Pow", {xf, ei}, 1e-6, 1e-6, "float32 ** int32");
  check("Pow", {xf, ed}, 1e-6, 1e-6, "float32 ** float64");
  check("Pow", {xh, ef}, 1e-3, 1e-2, "float16 ** float32");
  check("Pow", {xi, ei}, 0, 0, "int64 ** int32");
  check("Pow", {xi, ef}, 0, 0, "int64 ** float32");
  check("Pow", {xf, two}, 0, 0, "float32 ** 2");
}

TEST(GpuElementwise, ComparisonsAndLogic) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 400;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32, DType::kUInt8}) {
    for (const auto& [sa, sb] : kShapePairs) {
      // small integers so that equal values are common
      Tensor a = rand_of(dt, sa, seed++, 0, 4);
      Tensor b = rand_of(dt, sb, seed++, 0, 4);
      if (dtype_is_float(dt)) {
        a = rand_of(DType::kInt32, sa, seed++, 0, 4);
        b = rand_of(DType::kInt32, sb, seed++, 0, 4);
        auto to_dt = [&](const Tensor& t) {
          Tensor r(dt, t.shape());
          for (int64_t i = 0; i < t.numel(); ++i) {
            float v = float(t.data<int32_t>()[i]) * 0.5f;
            if (dt == DType::kFloat32) r.data<float>()[i] = v;
            else if (dt == DType::kFloat16) r.data<float16>()[i] = float16(v);
            else r.data<bfloat16>()[i] = bfloat16(v);
          }
          return r;
        };
        a = to_dt(a);
        b = to_dt(b);
      }
      const std::string what = label(dt, sa, sb);
      for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
        check(op, {a, b}, 0, 0, what);
    }
  }
  for (const auto& [sa, sb] : kShapePairs) {
    Tensor a = rand_of(DType::kBool, sa, seed++);
    Tensor b = rand_of(DType::kBool, sb, seed++);
    const std::string what = label(DType::kBool, sa, sb);
    for (const char* op : {"And", "Or", "Xor", "Equal"}) check(op, {a, b}, 0, 0, what);
  }
  check("Not", {rand_of(DType::kBool, {3, 1001}, seed++)}, 0, 0, "bool");
}

// Min/Max propagate NaN from either side; comparisons with NaN are false.
TEST(GpuElementwise, NaNHandling) {
  INGOT_REQUIRE_GPU();
  Tensor a = rand_of(DType::kFloat32, {64}, 500);
  Tensor b = rand_of(DType::kFloat32, {64}, 501);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 64; i += 5) a.data<float>()[i] = nan;
  for (int i = 0; i < 64; i += 7) b.data<float>()[i] = nan;
  for (const char* op : {"Max", "Min", "Add", "Equal", "Less", "GreaterOrEqual"}) check(op, {a, b}, 0, 0, "NaN");
  for (const char* op : {"IsNaN", "Relu", "Sign", "Abs", "Neg", "Clip"}) check(op, {a}, 0, 0, "NaN");
}

TEST(GpuElementwise, WhereBroadcast) {
  INGOT_REQUIRE_GPU();
  struct Case {
    Shape c, x, y;
  };
  const std::vector<Case> cases = {
      {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}}, {{2, 1, 5}, {3, 1}, {}},      {{1, 1, 4099}, {4099}, {1}},
      {{4, 1, 1, 16}, {1, 3, 2, 16}, {16}}, {{}, {2, 33}, {1, 33}},   {{2, 8, 8}, {8}, {2, 1, 8}},
  };
  uint32_t seed = 600;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kBool, DType::kUInt8,
                   DType::kFloat64}) {
    for (const Case& k : cases) {
      Tensor c = rand_of(DType::kBool, k.c, seed++);
      Tensor x = rand_of(dt, k.x, seed++, 0, 100);
      Tensor y = rand_of(dt, k.y, seed++, 0, 100);
      const std::string what = shape_str(k.c) + " " + shape_str(k.x) + " " + shape_str(k.y);
      check("Where", {c, x, y}, 0, 0, dtype_name(dt) + " " + what);
    }
  }
}

TEST(GpuElementwise, PReluSlopes) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 700;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt32}) {
    Tensor x = rand_of(dt, {2, 3, 4, 5}, seed++, -10, 10);
    for (const Shape& s : std::vector<Shape>{{3, 1, 1}, {5}, {1}, {2, 3, 4, 5}}) {
      Tensor slope = rand_of(dt, s, seed++, -3, 3);
      check("PRelu", {x, slope}, 1e-3, 1e-3, dtype_name(dt) + " slope " + shape_str(s));
    }
  }
}

// Variadic ops with 1 to 4 inputs broadcasting together.
TEST(GpuElementwise, VariadicMaxMinSumMean) {
  INGOT_REQUIRE_GPU();
  const std::vector<Shape> shapes = {{2, 1, 5}, {3, 1}, {5}, {1, 3, 5}};
  uint32_t seed = 800;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
    for (size_t n = 1; n <= shapes.size(); ++n) {
      std::vector<Tensor> ins;
      for (size_t i = 0; i < n; ++i) ins.push_back(rand_of(dt, shapes[i], seed++, -50, 50));
      const std::string what = dtype_name(dt) + " " + std::to_string(n) + " inputs";
      const double tol = dt == DType::kFloat16 ? 1e-2 : 1e-6;
      check("Max", ins, 0, 0, what);
      check("Min", ins, 0, 0, what);
      if (dtype_is_float(dt)) {
        check("Sum", ins, tol, tol, what);
        check("Mean", ins, tol, tol, what);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Unary ops, each on inputs inside its domain.
struct UnaryCase {
  const char* op;
  double lo, hi;
  Attributes attrs;
};

std::vector<UnaryCase> unary_float_cases() {
  return {
      {"Neg", -4, 4, {}},        {"Abs", -4, 4, {}},          {"Sign", -2, 2, {}},       {"Relu", -4, 4, {}},
      {"Sqrt", 0.01, 9, {}},     {"Reciprocal", 0.5, 4, {}},  {"Exp", -6, 6, {}},        {"Log", 0.01, 9, {}},
      {"Erf", -3, 3, {}},        {"Sin", -6, 6, {}},          {"Cos", -6, 6, {}},        {"Tan", -1.2, 1.2, {}},
      {"Asin", -0.95, 0.95, {}}, {"Acos", -0.95, 0.95, {}},   {"Atan", -4, 4, {}},       {"Sinh", -3, 3, {}},
      {"Cosh", -3, 3, {}},       {"Asinh", -4, 4, {}},        {"Acosh", 1.05, 5, {}},    {"Atanh", -0.95, 0.95, {}},
      {"Floor", -9, 9, {}},      {"Ceil", -9, 9, {}},         {"Sigmoid", -8, 8, {}},    {"Tanh", -4, 4, {}},
      {"Softplus", -8, 8, {}},   {"Softsign", -4, 4, {}},     {"Mish", -6, 6, {}},       {"HardSwish", -5, 5, {}},
      {"Gelu", -5, 5, {}},
      {"Gelu", -5, 5, attrs_of({{"approximate", string_attr("tanh")}})},
      {"LeakyRelu", -4, 4, attrs_of({{"alpha", float_attr(0.2f)}})},
      {"Elu", -4, 4, attrs_of({{"alpha", float_attr(0.7f)}})},
      {"Selu", -4, 4, {}},
      {"Celu", -4, 4, attrs_of({{"alpha", float_attr(1.5f)}})},
      {"HardSigmoid", -5, 5, attrs_of({{"alpha", float_attr(0.3f)}, {"beta", float_attr(0.4f)}})},
      {"ThresholdedRelu", -3, 3, attrs_of({{"alpha", float_attr(0.5f)}})},
      {"Shrink", -3, 3, attrs_of({{"lambd", float_attr(0.8f)}, {"bias", float_attr(0.3f)}})},
  };
}

TEST(GpuElementwise, UnaryFloat32) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 900;
  for (const UnaryCase& c : unary_float_cases()) {
    for (const Shape& s : std::vector<Shape>{{4099}, {3, 5, 64}, {}}) {
      Tensor x = rand_of(DType::kFloat32, s, seed++, c.lo, c.hi);
      // CUDA's full-precision math is within 2 ulp, the CPU's within 1
      check(c.op, {x}, 1e-6, 2e-6, "float32 " + shape_str(s), c.attrs, 20);
    }
  }
}

TEST(GpuElementwise, UnaryHalfTypesAndFloat64) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1000;
  for (const UnaryCase& c : unary_float_cases()) {
    for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
      Tensor x = rand_of(dt, {7, 131}, seed++, c.lo, c.hi);
      const double tol = dt == DType::kFloat64 ? 1e-12 : 1e-2;
      check(c.op, {x}, tol, tol, dtype_name(dt), c.attrs, 20);
    }
  }
}

// Round is half to even; values on .5 exactly.
TEST(GpuElementwise, RoundHalfToEven) {
  INGOT_REQUIRE_GPU();
  Tensor x(DType::kFloat32, {41});
  for (int i = 0; i < 41; ++i) x.data<float>()[i] = float(i - 20) * 0.5f + (i % 3 == 0 ? 0.1f : 0.f);
  check("Round", {x}, 0, 0, "float32");
}

TEST(GpuElementwise, UnaryIntegers) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1100;
  for (DType dt : {DType::kInt64, DType::kInt32, DType::kInt8}) {
    Tensor x = rand_of(dt, {3, 333}, seed++, -100, 100);
    for (const char* op : {"Neg", "Abs", "Sign", "Relu"}) check(op, {x}, 0, 0, dtype_name(dt));
    check("Shrink", {x}, 0, 0, dtype_name(dt), attrs_of({{"lambd", float_attr(10.f)}, {"bias", float_attr(2.f)}}));
  }
  Tensor u = rand_of(DType::kUInt16, {1000}, seed++, 0, 1000);
  for (const char* op : {"Abs", "Sign"}) check(op, {u}, 0, 0, "uint16");
}

TEST(GpuElementwise, IsNaNIsInf) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kFloat64}) {
    Tensor f = rand_of(DType::kFloat32, {3, 50}, 1200, -5, 5);
    const float inf = std::numeric_limits<float>::infinity();
    for (int i = 0; i < 150; i += 4) f.data<float>()[i] = (i % 8 == 0) ? inf : -inf;
    for (int i = 1; i < 150; i += 9) f.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
    Tensor x(dt, f.shape());
    for (int64_t i = 0; i < f.numel(); ++i) {
      float v = f.data<float>()[i];
      if (dt == DType::kFloat32) x.data<float>()[i] = v;
      else if (dt == DType::kFloat16) x.data<float16>()[i] = float16(v);
      else x.data<double>()[i] = double(v);
    }
    check("IsNaN", {x}, 0, 0, dtype_name(dt));
    check("IsInf", {x}, 0, 0, dtype_name(dt));
    check("IsInf", {x}, 0, 0, dtype_name(dt) + " positive only", attrs_of({{"detect_negative", int_attr(0)}}));
    check("IsInf", {x}, 0, 0, dtype_name(dt) + " negative only", attrs_of({{"detect_positive", int_attr(0)}}));
  }
}

// ---------------------------------------------------------------------------------------
// Clip: bounds as graph inputs (read on the device), as initializers (known at plan time),
// one bound omitted, and the opset-6 attributes.
Tensor scalar_of(DType dt, double v) {
  Tensor t(dt, {});
  dispatch_numeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data<T>()[0] = T(float(v));
  });
  return t;
}

TEST(GpuElementwise, ClipBounds) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1300;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kUInt8}) {
    const bool is_unsigned = dt == DType::kUInt8;
    Tensor x = rand_of(dt, {5, 77}, seed++, is_unsigned ? 0 : -10, 10);
    Tensor lo = scalar_of(dt, is_unsigned ? 2 : -3);
    Tensor hi = scalar_of(dt, 4);
    check("Clip", {x, lo, hi}, 0, 0, dtype_name(dt) + " bounds as inputs", {}, 13);
    check("Clip", {x}, 0, 0, dtype_name(dt) + " no bounds", {}, 13);

    // bounds as initializers: host values known at plan time
    Model m = single_node_model("Clip", {x, lo, hi}, 1, {}, 13);
    for (int i = 1; i <= 2; ++i) {
      ValueId id = m.graph.find("in" + std::to_string(i));
      m.graph.initializers[id] = i == 1 ? lo : hi;
      m.graph.inputs.erase(std::find(m.graph.inputs.begin(), m.graph.inputs.end(), id));
    }
    expect_cuda_matches_cpu(m, feeds_of({x}), 0, 0, "Clip " + dtype_name(dt) + " bounds as initializers");

    // min omitted
    Model only_max = single_node_model("Clip", {x, hi}, 1, {}, 13);
    Node& n = only_max.graph.nodes[0];
    n.inputs = {n.inputs[0], kNoValue, n.inputs[1]};
    expect_cuda_matches_cpu(only_max, feeds_of({x, hi}), 0, 0, "Clip " + dtype_name(dt) + " max only");
  }
  Tensor xf = rand_of(DType::kFloat32, {3, 40}, seed++, -10, 10);
  check("Clip", {xf}, 0, 0, "opset 6 attributes", attrs_of({{"min", float_attr(-2.5f)}, {"max", float_attr(1.5f)}}),
        6);
}

// ---------------------------------------------------------------------------------------
// Cast between every pair of dtypes, on values that exercise truncation, wrapping, rounding
// to half types, NaN and infinities.
TEST(GpuElementwise, CastMatrix) {
  INGOT_REQUIRE_GPU();
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                                     DType::kInt8,    DType::kInt16,   DType::kInt32,    DType::kInt64,
                                     DType::kUInt8,   DType::kUInt16,  DType::kUInt32,   DType::kUInt64,
                                     DType::kBool};
  Tensor f = random_tensor({3, 67}, 1400, -300.f, 300.f);
  const float specials[] = {0.f, -0.f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 255.7f, -129.3f, 65504.f, 70000.f, 1e10f,
                            -1e10f, 3e38f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                            1.0009765625f, 0.333333f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float); ++i) f.data<float>()[i * 3] = specials[i];
  for (DType from : dtypes) {
    Tensor x(from, f.shape());
    dispatch_all(from, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < f.numel(); ++i) {
        float v = f.data<float>()[i];
        if constexpr (std::is_same_v<T, bool>) x.data<T>()[i] = v > 0;
        else if constexpr (std::is_integral_v<T>)
          x.data<T>()[i] = std::isfinite(v) && std::fabs(v) < 1e9f ? T(int64_t(v)) : T(i);
        else x.data<T>()[i] = T(v);
      }
    });
    for (DType to : dtypes) {
      const std::string what = dtype_name(from) + " -> " + dtype_name(to);
      check("Cast", {x}, 0, 0, what, attrs_of({{"to", int_attr(int64_t(to))}}));
      if (to == DType::kFloat16 || to == DType::kInt64) check("CastLike", {x, Tensor(to, {1})}, 0, 0, what);
    }
  }
}

// The precision pass's boundary casts on a large tensor: vectorised path and an odd tail.
TEST(GpuElementwise, CastLargeHalfBoundaries) {
  INGOT_REQUIRE_GPU();
  Tensor x = rand_of(DType::kFloat32, {257, 3073}, 1500, -100, 100);
  Tensor h = rand_of(DType::kFloat16, {257, 3073}, 1501, -100, 100);
  Tensor b = rand_of(DType::kBFloat16, {257, 3073}, 1502, -100, 100);
  for (DType to : {DType::kFloat16, DType::kBFloat16})
    check("Cast", {x}, 0, 0, "float32 -> " + dtype_name(to), attrs_of({{"to", int_attr(int64_t(to))}}));
  check("Cast", {h}, 0, 0, "float16 -> float32", attrs_of({{"to", int_attr(int64_t(DType::kFloat32))}}));
  check("Cast", {b}, 0, 0, "bfloat16 -> float32", attrs_of({{"to", int_attr(int64_t(DType::kFloat32))}}));
}

// A broadcast that keeps 9 dims after merging is refused by supports() and runs on the CPU
// with copies: the result must still be right.
TEST(GpuElementwise, UnsupportedBroadcastFallsBackToCpu) {
  INGOT_REQUIRE_GPU();
  Tensor a = rand_of(DType::kFloat32, {2, 1, 2, 1, 2, 1, 2, 1, 2}, 1600);
  Tensor b = rand_of(DType::kFloat32, {1, 2, 1, 2, 1, 2, 1, 2, 1}, 1601);
  Model m = single_node_model("Add", {a, b}, 1);
  EngineOptions o;
  o.device = "cuda";
  auto e = Engine::from_model(m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  ASSERT_NE((*e)->device(), nullptr);
  // The model declares no shapes, so the node is placed at its first run.
  ASSERT_TRUE((*e)->create_context()->run(feeds_of({a, b})).has_value());
  bool refused = false;
  for (const FallbackOp& f : (*e)->device()->fallback_ops()) refused |= f.reason.find("broadcast") != std::string::npos;
  EXPECT_TRUE(refused) << "Add was not reported as a CPU fallback with its broadcast reason";
  expect_cuda_matches_cpu(m, feeds_of({a, b}), 0, 0, "Add rank-9 broadcast");
}

}  // namespace
}  // namespace ingot::testing
