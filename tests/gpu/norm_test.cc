// CUDA normalisation kernels (LayerNormalization, ingot.SkipLayerNorm, Softmax, LogSoftmax,
// ingot.Gelu) against the CPU kernels, through the Engine. Inputs with means far from zero
// ([3, 5]) catch one-pass variance (E[x²] - E[x]²) cancellation; hidden sizes cover the
// vectorised warp path (768, 1024), the scalar path (7), the block path (4099) and rows too long
// for registers; row counts cover one row, a partial block and more rows than the grid.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

// One operand of the node: a graph input, an initializer, or omitted (t undefined).
struct Operand {
  Tensor t;
  bool initializer = false;
};

struct Case {
  std::string op, domain;
  int opset = 17;
  Attributes attrs;
  std::vector<Operand> inputs;  // float32 master values
  std::vector<bool> outputs;    // which outputs the node has
};

// t's values in dtype `to` (rounded to it).
Tensor convert(const Tensor& t, DType to) {
  Tensor r(to, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = float(t.scalar_as_double(i));
    switch (to) {
      case DType::kFloat32: r.data<float>()[i] = v; break;
      case DType::kFloat16: r.data<float16>()[i] = float16(v); break;
      case DType::kBFloat16: r.data<bfloat16>()[i] = bfloat16(v); break;
      case DType::kFloat64: r.data<double>()[i] = double(v); break;
      default: ADD_FAILURE() << "convert: dtype " << dtype_name(to); return r;
    }
  }
  return r;
}

// The one-node model with every float operand stored as `dt`; when `widen`, as float32 copies
// of the `dt`-rounded values instead (the float reference of a half-precision model).
Model make_model(const Case& c, DType dt, bool widen, std::map<std::string, Tensor>* feeds) {
  Model m;
  m.path = "test:" + c.op;
  m.ir_version = 8;
  m.opsets[""] = c.opset;
  if (!c.domain.empty()) m.opsets[c.domain] = 1;
  Graph& g = m.graph;
  Node n;
  n.op_type = c.op;
  n.domain = c.domain;
  n.name = c.op + "_0";
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].t.defined()) {
      n.inputs.push_back(kNoValue);
      continue;
    }
    Tensor v = convert(c.inputs[i].t, dt);
    if (widen) v = convert(v, DType::kFloat32);
    const std::string name = "in" + std::to_string(i);
    ValueId id = g.intern(name);
    g.value(id).dtype = v.dtype();
    if (c.inputs[i].initializer) {
      g.initializers[id] = v;
    } else {
      g.inputs.push_back(id);
      (*feeds)[name] = v;
    }
    n.inputs.push_back(id);
  }
  while (!n.inputs.empty() && n.inputs.back() == kNoValue) n.inputs.pop_back();
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i]) {
      n.outputs.push_back(kNoValue);
      continue;
    }
    ValueId id = g.intern("out" + std::to_string(i));
    g.outputs.push_back(id);
    n.outputs.push_back(id);
  }
  while (!n.outputs.empty() && n.outputs.back() == kNoValue) n.outputs.pop_back();
  g.nodes.push_back(std::move(n));
  return m;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.scalar_as_double(i)));
  return m;
}

// float32 model: CUDA against the CPU within atol + rtol·|ref|.
void expect_fp32(const Case& c, double atol, double rtol, const std::string& what) {
  std::map<std::string, Tensor> feeds;
  Model m = make_model(c, DType::kFloat32, false, &feeds);
  expect_cuda_matches_cpu(m, feeds, atol, rtol, what);
}

// Half-precision model (dt = float16 / bfloat16), compared two ways:
//  1. with the CPU kernel on the same model: the same function on the same rounded values,
//     so outputs differ by at most about one rounding of the output (`ulp` relative);
//  2. with the CPU on float32 copies of the rounded inputs: the half model's distance from
//     float arithmetic (rounded outputs, and SkipLayerNorm's sum rounded as the unfused
//     graph stores it), within `tol` scaled by the output's magnitude.
void expect_half(const Case& c, DType dt, const std::string& what) {
  const double ulp = dt == DType::kFloat16 ? 1.0 / 1024 : 1.0 / 128;
  const double tol = dt == DType::kFloat16 ? 1e-2 : 4e-2;
  std::map<std::string, Tensor> feeds, wide_feeds;
  Model m = make_model(c, dt, false, &feeds);
  Model wide = make_model(c, dt, true, &wide_feeds);
  auto got = run_model_on(m, feeds, "cuda");
  auto same = run_model_on(m, feeds, "cpu");
  auto ref = run_model_on(wide, wide_feeds, "cpu");
  ASSERT_EQ(got.size(), same.size()) << what;
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string w = what + " " + dtype_name(dt) + ", output " + std::to_string(i);
    ASSERT_EQ(got[i].dtype(), same[i].dtype()) << w;
    const Tensor g32 = convert(got[i], DType::kFloat32);
    const double scale = std::max(1.0, max_abs(ref[i]));
    expect_close(g32, convert(same[i], DType::kFloat32), 1e-5 * scale, 2 * ulp, w + " (vs CPU " + dtype_name(dt) + ")");
    expect_close(g32, convert(ref[i], DType::kFloat32), tol * scale, tol, w + " (vs CPU float32)");
  }
}

const std::vector<int64_t> kHidden = {768, 1024, 7, 4099};
const std::vector<int64_t> kRows = {1, 5, 1000};

std::string dims(int64_t rows, int64_t h) { return "[" + std::to_string(rows) + ", " + std::to_string(h) + "]"; }

Attributes attrs(std::initializer_list<std::pair<const char*, Attribute>> kv) {
  Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// ---------------------------------------------------------------------------------------------
// LayerNormalization

Case layer_norm(Shape x_shape, int64_t axis, Shape param_shape, bool with_bias, bool mean, bool inv_std,
                uint32_t seed, float lo = 3, float hi = 5) {
  Case c;
  c.op = "LayerNormalization";
  c.attrs = attrs({{"axis", int_attr(axis)}, {"epsilon", float_attr(1e-5f)}});
  c.inputs.push_back({random_tensor(x_shape, seed, lo, hi)});
  c.inputs.push_back({random_tensor(param_shape, seed + 1, 0.5f, 1.5f), true});
  if (with_bias) c.inputs.push_back({random_tensor(param_shape, seed + 2, -1, 1), true});
  c.outputs = {true, mean, inv_std};
  return c;
}

TEST(GpuNorm, LayerNormFp32) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 100;
  for (int64_t h : kHidden) {
    for (int64_t rows : kRows) {
      const bool stats = rows != 5;
      Case c = layer_norm({rows, h}, -1, {h}, rows != 1, stats, stats, ++seed);
      expect_fp32(c, 1e-5, 1e-5, "LayerNorm " + dims(rows, h));
    }
  }
}

TEST(GpuNorm, LayerNormInputsNearZero) {
  INGOT_REQUIRE_GPU();
  expect_fp32(layer_norm({64, 768}, -1, {768}, true, true, true, 7, -1, 1), 1e-5, 1e-5, "LayerNorm [-1, 1]");
}

TEST(GpuNorm, LayerNormAxesAndBroadcastParams) {
  INGOT_REQUIRE_GPU();
  // axis 1 of [2, 3, 50]: blocks of [3, 50]; Scale/B broadcast along the block's first dim.
  expect_fp32(layer_norm({2, 3, 50}, 1, {1, 50}, true, true, true, 11), 1e-5, 1e-5, "LayerNorm axis 1, Scale [1, 50]");
  expect_fp32(layer_norm({2, 3, 50}, -2, {3, 1}, true, false, true, 12), 1e-5, 1e-5, "LayerNorm axis -2, Scale [3, 1]");
  expect_fp32(layer_norm({2, 3, 64}, 1, {3, 64}, false, true, false, 13), 1e-5, 1e-5, "LayerNorm axis 1, no B");
  expect_fp32(layer_norm({4, 6, 8}, 0, {6, 8}, true, true, true, 14), 1e-5, 1e-5, "LayerNorm axis 0");
  // A single Scale value for the whole block.
  expect_fp32(layer_norm({5, 96}, -1, {1}, true, false, false, 15), 1e-5, 1e-5, "LayerNorm Scale [1]");
}

TEST(GpuNorm, LayerNormHalf) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 200;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t h : kHidden) {
      for (int64_t rows : kRows) {
        Case c = layer_norm({rows, h}, -1, {h}, true, rows == 5, rows == 5, ++seed);
        expect_half(c, dt, "LayerNorm " + dims(rows, h));
      }
    }
  }
}

// Rows longer than the register path holds (re-read from memory), and more rows than the grid.
TEST(GpuNorm, LayerNormLongRowsAndManyRows) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 300;
  for (int64_t h : {8192, 8193, 16384, 16392, 20000, 33333}) {
    expect_fp32(layer_norm({3, h}, -1, {h}, true, true, true, ++seed), 1e-5, 1e-5, "LayerNorm " + dims(3, h));
    expect_half(layer_norm({3, h}, -1, {h}, true, false, false, ++seed), DType::kFloat16, "LayerNorm " + dims(3, h));
  }
  for (auto [rows, h] : std::vector<std::pair<int64_t, int64_t>>{{70000, 32}, {70000, 33}, {20000, 768}}) {
    expect_fp32(layer_norm({rows, h}, -1, {h}, true, false, true, ++seed), 1e-5, 1e-5, "LayerNorm " + dims(rows, h));
  }
}

// ---------------------------------------------------------------------------------------------
// ingot.SkipLayerNorm

Case skip_layer_norm(Shape x_shape, Shape skip_shape, int64_t h, bool beta, bool bias, bool sum_out, uint32_t seed,
                     Shape gamma_shape = {}) {
  Case c;
  c.op = "SkipLayerNorm";
  c.domain = "ingot";
  c.attrs = attrs({{"epsilon", float_attr(1e-5f)}});
  if (gamma_shape.empty()) gamma_shape = {h};
  c.inputs.push_back({random_tensor(x_shape, seed, 3, 5)});
  c.inputs.push_back({random_tensor(skip_shape, seed + 1, -1, 1)});
  c.inputs.push_back({random_tensor(gamma_shape, seed + 2, 0.5f, 1.5f), true});
  c.inputs.push_back({beta ? random_tensor({h}, seed + 3, -1, 1) : Tensor(), true});
  c.inputs.push_back({bias ? random_tensor({h}, seed + 4, -0.5f, 0.5f) : Tensor(), true});
  c.outputs = {true, sum_out};
  return c;
}

TEST(GpuNorm, SkipLayerNormFp32) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 400;
  int variant = 0;
  for (int64_t h : kHidden) {
    for (int64_t rows : kRows) {
      // Cycle through beta / bias / sum-output presence.
      const bool beta = variant % 2 == 0, bias = variant % 3 != 0, sum = variant % 4 < 2;
      ++variant;
      Case c = skip_layer_norm({rows, h}, {rows, h}, h, beta, bias, sum, seed += 8);
      expect_fp32(c, 1e-5, 1e-5,
                  "SkipLayerNorm " + dims(rows, h) + (beta ? " beta" : "") + (bias ? " bias" : "") + (sum ? " sum" : ""));
    }
  }
}

TEST(GpuNorm, SkipLayerNormAllOptionalVariants) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 500;
  for (int mask = 0; mask < 8; ++mask) {
    const bool beta = mask & 1, bias = mask & 2, sum = mask & 4;
    expect_fp32(skip_layer_norm({2, 16, 768}, {2, 16, 768}, 768, beta, bias, sum, seed += 8), 1e-5, 1e-5,
                "SkipLayerNorm variant " + std::to_string(mask));
  }
}

TEST(GpuNorm, SkipLayerNormBroadcast) {
  INGOT_REQUIRE_GPU();
  // Position embeddings [S, H] / [1, S, H] added to [B, S, H]; X broadcast instead of skip.
  expect_fp32(skip_layer_norm({4, 16, 768}, {16, 768}, 768, true, false, true, 600), 1e-5, 1e-5, "skip [S, H]");
  expect_fp32(skip_layer_norm({4, 16, 768}, {1, 16, 768}, 768, true, true, true, 610), 1e-5, 1e-5, "skip [1, S, H]");
  expect_fp32(skip_layer_norm({1, 16, 100}, {4, 16, 100}, 100, true, false, true, 620), 1e-5, 1e-5, "X [1, S, H]");
  // A single gamma value (expanded through the workspace).
  expect_fp32(skip_layer_norm({8, 256}, {8, 256}, 256, true, true, false, 630, {1}), 1e-5, 1e-5, "gamma [1]");
}

TEST(GpuNorm, SkipLayerNormHalf) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 700;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (int64_t h : kHidden) {
      for (int64_t rows : kRows) {
        Case c = skip_layer_norm({rows, h}, {rows, h}, h, true, rows != 5, true, seed += 8);
        expect_half(c, dt, "SkipLayerNorm " + dims(rows, h));
      }
    }
  }
}

TEST(GpuNorm, SkipLayerNormLongRowsAndManyRows) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 800;
  for (int64_t h : {8192, 8193, 16392, 20000}) {
    expect_fp32(skip_layer_norm({3, h}, {3, h}, h, true, true, true, seed += 8), 1e-5, 1e-5, "SkipLayerNorm " + dims(3, h));
    expect_half(skip_layer_norm({3, h}, {3, h}, h, true, false, true, seed += 8), DType::kFloat16,
                "SkipLayerNorm " + dims(3, h));
  }
  expect_fp32(skip_layer_norm({70000, 64}, {70000, 64}, 64, true, true, false, seed += 8), 1e-5, 1e-5,
              "SkipLayerNorm " + dims(70000, 64));
}

// ---------------------------------------------------------------------------------------------
// Softmax / LogSoftmax

Case softmax(const std::string& op, Shape shape, int opset, const int64_t* axis, uint32_t seed) {
  Case c;
  c.op = op;
  c.opset = opset;
  if (axis) c.attrs = attrs({{"axis", int_attr(*axis)}});
  c.inputs.push_back({random_tensor(shape, seed, -8, 8)});
  c.outputs = {true};
  return c;
}

TEST(GpuNorm, SoftmaxLastAxisFp32) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 900;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    // Softmax values are ~1/n: the relative tolerance is what checks them.
    const double atol = std::string(op) == "Softmax" ? 1e-8 : 1e-5;
    for (int64_t h : kHidden) {
      for (int64_t rows : kRows) expect_fp32(softmax(op, {rows, h}, 13, nullptr, ++seed), atol, 1e-5, op + dims(rows, h));
    }
    for (int64_t h : {8192, 8193, 16392, 20000}) expect_fp32(softmax(op, {3, h}, 13, nullptr, ++seed), atol, 1e-5, op + dims(3, h));
  }
}

TEST(GpuNorm, SoftmaxMiddleAxisAndLegacyOpsets) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1000;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const std::string o = op;
    const double atol = o == "Softmax" ? 1e-8 : 1e-5;
    const int64_t a1 = 1, a0 = 0, am2 = -2, am1 = -1;
    // opset 13: along one axis (inner stride != 1 for all but the last).
    expect_fp32(softmax(op, {4, 37, 9}, 13, &a1, ++seed), atol, 1e-5, o + " opset 13 axis 1");
    expect_fp32(softmax(op, {4, 37, 9}, 13, &am2, ++seed), atol, 1e-5, o + " opset 13 axis -2");
    expect_fp32(softmax(op, {6, 5, 300}, 13, &a0, ++seed), atol, 1e-5, o + " opset 13 axis 0");
    expect_fp32(softmax(op, {2, 3, 4, 5}, 13, &a1, ++seed), atol, 1e-5, o + " opset 13 axis 1 rank 4");
    // opset 11: coerced to 2-D at axis (default 1): rows of prod(dims[axis:]).
    expect_fp32(softmax(op, {4, 37, 9}, 11, nullptr, ++seed), atol, 1e-5, o + " opset 11 default axis");
    expect_fp32(softmax(op, {4, 37, 9}, 11, &a0, ++seed), atol, 1e-5, o + " opset 11 axis 0");
    expect_fp32(softmax(op, {4, 37, 9}, 11, &am1, ++seed), atol, 1e-5, o + " opset 11 axis -1");
    expect_fp32(softmax(op, {3, 8, 128}, 11, &a1, ++seed), atol, 1e-5, o + " opset 11 axis 1 (vector rows)");
  }
}

TEST(GpuNorm, SoftmaxHalf) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1100;
  const int64_t a1 = 1;
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      for (int64_t h : kHidden) {
        for (int64_t rows : kRows) expect_half(softmax(op, {rows, h}, 13, nullptr, ++seed), dt, op + dims(rows, h));
      }
      expect_half(softmax(op, {4, 37, 9}, 13, &a1, ++seed), dt, std::string(op) + " axis 1");
      expect_half(softmax(op, {4, 37, 9}, 11, &a1, ++seed), dt, std::string(op) + " opset 11");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ingot.Gelu

Case gelu(Shape shape, const char* approximate, uint32_t seed) {
  Case c;
  c.op = "Gelu";
  c.domain = "ingot";
  c.attrs = attrs({{"approximate", string_attr(approximate)}});
  c.inputs.push_back({random_tensor(shape, seed, -6, 6)});
  c.outputs = {true};
  return c;
}

TEST(GpuNorm, Gelu) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1200;
  // The CPU's float GELU uses rational erf/tanh approximations within 5e-7 of the functions.
  for (const char* approx : {"none", "tanh"}) {
    for (Shape s : std::vector<Shape>{{1}, {7}, {5, 768}, {1000, 1024}, {1027, 1001}}) {
      expect_fp32(gelu(s, approx, ++seed), 2e-6, 1e-5, std::string("Gelu ") + approx + " " + shape_str(s));
      for (DType dt : {DType::kFloat16, DType::kBFloat16})
        expect_half(gelu(s, approx, ++seed), dt, std::string("Gelu ") + approx + " " + shape_str(s));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Cases the CUDA kernels refuse in supports(): the node runs on the CPU, with the same results.

TEST(GpuNorm, UnsupportedCasesFallBackToCpu) {
  INGOT_REQUIRE_GPU();
  // float64 is not a device float type.
  for (const Case& c : {layer_norm({5, 64}, -1, {64}, true, true, true, 1300), softmax("Softmax", {5, 64}, 13, nullptr, 1301),
                        gelu({5, 64}, "none", 1302)}) {
    std::map<std::string, Tensor> feeds;
    Model m = make_model(c, DType::kFloat64, false, &feeds);
    expect_cuda_matches_cpu(m, feeds, 1e-12, 1e-12, c.op + " float64");
  }
  // skip broadcast along a middle dim ([B, 1, H] against [B, S, H]) is not a row period.
  expect_fp32(skip_layer_norm({4, 16, 64}, {4, 1, 64}, 64, true, true, true, 1310), 1e-5, 1e-5, "skip [B, 1, H]");
}

}  // namespace
}  // namespace ingot::testing
