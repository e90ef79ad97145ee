// Conv, ingot.FusedConv, the pools, the reductions and BatchNormalization on CUDA against the
// CPU reference kernels, through the Engine (optimizer off, so each model is exactly the node
// under test: with it on, a Conv would become a FusedConv).
//
// float32 runs without TF32 (the engine's default) and is compared tightly; float16/bfloat16
// models are compared with the CPU's float32 model on the same rounded values. Every case also
// checks where the node ran: on the GPU, or, for the cases supports() must refuse, on the CPU.
// Weights are initializers (the prepare() path: packed filters, folded BatchNormalization)
// unless a case says it feeds them.
#include <cmath>
#include <optional>
#include <set>

#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Case {
  Model model;
  std::map<std::string, Tensor> feeds;
};

// A one-node model with inputs in0, in1, ... (an absent optional input where the tensor is
// undefined); indices in `constants` become initializers.
Case make_case(const std::string& op, const std::vector<Tensor>& inputs, const std::set<int>& constants,
               Attributes attrs, int num_outputs = 1, const std::string& domain = "", int opset = 17) {
  Case c;
  Model& m = c.model;
  m.path = "test:" + op;
  m.ir_version = 8;
  m.opsets[""] = opset;
  if (!domain.empty()) m.opsets[domain] = 1;
  Graph& g = m.graph;
  Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = op + "_0";
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back(kNoValue);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    ValueId id = g.intern(name);
    g.value(id).dtype = inputs[i].dtype();
    if (constants.count(int(i))) {
      g.initializers[id] = inputs[i];
    } else {
      g.inputs.push_back(id);
      c.feeds[name] = inputs[i];
    }
    n.inputs.push_back(id);
  }
  for (int i = 0; i < num_outputs; ++i) {
    ValueId id = g.intern("out" + std::to_string(i));
    g.outputs.push_back(id);
    n.outputs.push_back(id);
  }
  g.nodes.push_back(std::move(n));
  return c;
}

struct Ran {
  std::vector<Tensor> out;
  std::vector<std::string> fallbacks;  // "node: reason" of every node that ran on the CPU
};

Ran run_on(const Case& c, const std::string& device, bool cuda_graph = true) {
  EngineOptions o;
  o.device = device;
  o.optimize = false;
  o.cuda_graph = cuda_graph;
  Ran r;
  auto e = Engine::from_model(c.model, o);
  EXPECT_TRUE(e.has_value()) << device << ": " << e.status().message();
  if (!e) return r;
  auto out = (*e)->create_context()->run(c.feeds);
  EXPECT_TRUE(out.has_value()) << device << ": " << out.status().message();
  if (out)
    for (auto& nt : *out) r.out.push_back(nt.tensor);
  if ((*e)->device())
    for (const FallbackOp& f : (*e)->device()->fallback_ops()) r.fallbacks.push_back(f.node + ": " + f.reason);
  return r;
}

enum class Where { kGpu, kCpu };

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

void expect_where(const Ran& r, Where where, const std::string& what) {
  if (where == Where::kGpu) EXPECT_TRUE(r.fallbacks.empty()) << what << ": ran on the CPU: " << joined(r.fallbacks);
  else EXPECT_FALSE(r.fallbacks.empty()) << what << ": expected supports() to refuse it";
}

// float32: |err| <= 1e-4 + 1e-4·|ref| for every output, with and without a CUDA graph.
void expect_fp32(const Case& c, const std::string& what, Where where = Where::kGpu) {
  Ran ref = run_on(c, "cpu");
  for (bool graph : {true, false}) {
    const std::string w = what + (graph ? " (graph)" : " (eager)");
    Ran got = run_on(c, "cuda", graph);
    ASSERT_EQ(got.out.size(), ref.out.size()) << w;
    for (size_t i = 0; i < ref.out.size(); ++i) expect_close(got.out[i], ref.out[i], 1e-4, 1e-4, w);
    expect_where(got, where, w);
  }
}

Tensor rounded_to(const Tensor& f32, DType dt) {
  Tensor t(dt, f32.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = f32.data<float>()[i];
    if (dt == DType::kFloat16) t.data<float16>()[i] = float16(v);
    else if (dt == DType::kBFloat16) t.data<bfloat16>()[i] = bfloat16(v);
    else t.data<float>()[i] = v;
  }
  return t;
}

Tensor as_f32(const Tensor& t) {
  Tensor f(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = float(element(t, i));
  return f;
}

// float16/bfloat16: the model in `dt` on CUDA against the CPU's float32 model on the same
// rounded values; 1e-2 relative and 1e-2 absolute scaled by the output's RMS. `make` builds
// the case from its float inputs.
template <class Make>
void expect_half(DType dt, const std::vector<Tensor>& inputs, Make&& make, const std::string& what) {
  std::vector<Tensor> half, ref_in;
  for (const Tensor& t : inputs) {
    half.push_back(t.defined() && t.dtype() == DType::kFloat32 ? rounded_to(t, dt) : t);
    ref_in.push_back(half.back().defined() && half.back().dtype() == dt ? as_f32(half.back()) : half.back());
  }
  const std::string w = what + " " + dtype_name(dt);
  Ran ref = run_on(make(ref_in), "cpu");
  Ran got = run_on(make(half), "cuda");
  ASSERT_EQ(got.out.size(), ref.out.size()) << w;
  ASSERT_FALSE(ref.out.empty()) << w;
  ASSERT_EQ(got.out[0].dtype(), dt) << w;
  double sq = 0;
  for (int64_t i = 0; i < ref.out[0].numel(); ++i) sq += double(ref.out[0].data<float>()[i]) * ref.out[0].data<float>()[i];
  const double rms = ref.out[0].numel() ? std::sqrt(sq / double(ref.out[0].numel())) : 0;
  expect_close(as_f32(got.out[0]), ref.out[0], 1e-2 * std::max(1.0, rms), 1e-2, w);
  expect_where(got, Where::kGpu, w);
}

Attribute floats_attr(std::vector<float> v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

// ---------------------------------------------------------------------------------------------
// Convolutions

struct ConvSpec {
  std::string what;
  int64_t n = 1, c = 8, h = 9, w = 9, k = 8, r = 3, s = 3;
  int64_t stride = 1, pad = 1, dil = 1, group = 1;
  bool bias = true, z = false;
  std::string act;
  std::vector<float> act_params;
  bool x_cl = false, z_cl = false, y_cl = false;
  bool feed_weights = false;  // W and B as graph inputs instead of initializers
};

int64_t out_dim(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

// [N, C, H, W] stored channels-last as [N, H, W, C] when `cl`.
Shape physical(int64_t n, int64_t c, int64_t h, int64_t w, bool cl) { return cl ? Shape{n, h, w, c} : Shape{n, c, h, w}; }

// X, W (scaled so outputs stay O(1)), B, Z for a spec; absent ones undefined.
std::vector<Tensor> conv_inputs(const ConvSpec& s, uint32_t seed) {
  const float wr = 1.f / std::sqrt(float(s.c / s.group * s.r * s.s));
  const int64_t p = out_dim(s.h, s.r, s.stride, s.pad, s.dil), q = out_dim(s.w, s.s, s.stride, s.pad, s.dil);
  std::vector<Tensor> in = {random_tensor(physical(s.n, s.c, s.h, s.w, s.x_cl), seed, -1.f, 1.f),
                            random_tensor({s.k, s.c / s.group, s.r, s.s}, seed + 1, -wr, wr),
                            s.bias ? random_tensor({s.k}, seed + 2, -0.5f, 0.5f) : Tensor()};
  if (s.z) in.push_back(random_tensor(physical(s.n, s.k, p, q, s.z_cl), seed + 3, -1.f, 1.f));
  return in;
}

Attributes conv_attrs(const ConvSpec& s, bool fused) {
  Attributes a;
  a.set("kernel_shape", ints_attr({s.r, s.s}));
  a.set("strides", ints_attr({s.stride, s.stride}));
  a.set("pads", ints_attr({s.pad, s.pad, s.pad, s.pad}));
  a.set("dilations", ints_attr({s.dil, s.dil}));
  a.set("group", int_attr(s.group));
  if (fused) {
    a.set("activation", string_attr(s.act));
    a.set("activation_params", floats_attr(s.act_params));
    if (s.x_cl) a.set("x_channels_last", int_attr(1));
    if (s.z_cl) a.set("z_channels_last", int_attr(1));
    if (s.y_cl) a.set("y_channels_last", int_attr(1));
  }
  return a;
}

Case fused_conv_case(const ConvSpec& s, const std::vector<Tensor>& in) {
  std::set<int> constants;
  if (!s.feed_weights) constants = {1, 2};
  return make_case("FusedConv", in, constants, conv_attrs(s, true), 1, "ingot");
}

void check_fused_conv(const ConvSpec& s, uint32_t seed) {
  auto in = conv_inputs(s, seed);
  expect_fp32(fused_conv_case(s, in), s.what);
  expect_half(DType::kFloat16, in, [&](const std::vector<Tensor>& v) { return fused_conv_case(s, v); }, s.what);
}

TEST(GpuConv, FusedConvGeometries) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1;
  auto spec = [](std::string what) {
    ConvSpec s;
    s.what = std::move(what);
    return s;
  };
  {
    ConvSpec s = spec("3x3 s1 p1 bias relu");
    s.act = "Relu";
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("3x3 s2 p1 13x11 batch 3");
    s.n = 3, s.h = 13, s.w = 11, s.stride = 2, s.act = "Relu";
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("1x1 s1 p0 bias, no activation");
    s.r = s.s = 1, s.pad = 0, s.c = 16, s.k = 24;
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("1x1 s2 p0 no bias no activation (downsample)");
    s.r = s.s = 1, s.pad = 0, s.stride = 2, s.c = 16, s.k = 32, s.bias = false, s.h = s.w = 10;
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("7x7 s2 p3 stem, 3 channels, batch 3");
    s.n = 3, s.c = 3, s.k = 16, s.r = s.s = 7, s.stride = 2, s.pad = 3, s.h = s.w = 32, s.act = "Relu";
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("depthwise 3x3 group=C hardswish");
    s.c = s.k = s.group = 16, s.act = "HardSwish";
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("depthwise 5x5 s2 group=C relu 13x11");
    s.c = s.k = s.group = 24, s.r = s.s = 5, s.pad = 2, s.stride = 2, s.h = 13, s.w = 11, s.act = "Relu";
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("grouped group=4 leaky relu");
    s.c = 16, s.k = 8, s.group = 4, s.act = "LeakyRelu", s.act_params = {0.1f};
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("dilation 2 pad 2 clip(0,6)");
    s.dil = 2, s.pad = 2, s.h = 12, s.w = 10, s.act = "Clip", s.act_params = {0.f, 6.f};
    check_fused_conv(s, seed += 10);
  }
  {
    ConvSpec s = spec("no pads, no bias, no activation, 13x11");
    s.pad = 0, s.bias = false, s.h = 13, s.w = 11;
    check_fused_conv(s, seed += 10);
  }
}

TEST(GpuConv, FusedConvActivations) {
  INGOT_REQUIRE_GPU();
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"", {}},          {"Relu", {}},    {"LeakyRelu", {0.2f}}, {"Clip", {0.f, 6.f}},      {"Clip", {-0.5f, 0.25f}},
      {"HardSwish", {}}, {"Sigmoid", {}}, {"HardSigmoid", {0.2f, 0.5f}}};
  uint32_t seed = 200;
  for (const auto& [act, params] : acts) {
    for (bool z : {false, true}) {
      for (bool bias : {false, true}) {
        ConvSpec s;
        s.n = 2, s.h = 7, s.w = 6, s.act = act, s.act_params = params, s.z = z, s.bias = bias;
        s.what = "activation '" + act + "'" + (z ? " + Z" : "") + (bias ? " + bias" : "");
        check_fused_conv(s, seed += 10);
      }
    }
  }
}

TEST(GpuConv, FusedConvChannelsLast) {
  INGOT_REQUIRE_GPU();
  struct L {
    bool x, z, y;
  };
  uint32_t seed = 400;
  for (L l : {L{true, false, false}, L{false, false, true}, L{true, true, true}, L{false, true, false},
              L{true, false, true}, L{false, true, true}, L{true, true, false}}) {
    for (const char* act : {"Relu", "HardSwish"}) {
      ConvSpec s;
      s.n = 3, s.c = 16, s.k = 24, s.h = 13, s.w = 11, s.z = true, s.act = act;
      s.x_cl = l.x, s.z_cl = l.z, s.y_cl = l.y;
      s.what = std::string("layouts x") + (l.x ? "NHWC" : "NCHW") + " z" + (l.z ? "NHWC" : "NCHW") + " y" +
               (l.y ? "NHWC" : "NCHW") + " " + act;
      check_fused_conv(s, seed += 10);
    }
  }
  // The ResNet body: 1x1 and 3x3 s2 convolutions with everything channels-last, no residual.
  ConvSpec s;
  s.what = "all channels-last 3x3 s2 relu";
  s.n = 2, s.c = 32, s.k = 64, s.h = s.w = 14, s.stride = 2, s.act = "Relu", s.x_cl = s.y_cl = true;
  check_fused_conv(s, seed += 10);
}

TEST(GpuConv, FusedConvFedWeights) {
  INGOT_REQUIRE_GPU();
  // W and B not constant: the filter is repacked on the device on every run (NHWC paths).
  ConvSpec s;
  s.what = "fed weights, z, relu";
  s.n = 2, s.c = 12, s.k = 20, s.z = true, s.act = "Relu", s.feed_weights = true;
  check_fused_conv(s, 600);
  s.what = "fed weights, channels-last x, no bias";
  s.bias = false, s.z = false, s.x_cl = true, s.act = "Sigmoid";
  check_fused_conv(s, 610);
}

TEST(GpuConv, FusedConvBroadcastResidual) {
  INGOT_REQUIRE_GPU();
  // Z of batch 1 against a batch-3 output: the epilogue broadcasts it.
  ConvSpec s;
  s.n = 3, s.act = "LeakyRelu", s.act_params = {0.1f};
  auto in = conv_inputs(s, 700);
  const int64_t p = out_dim(s.h, s.r, 1, 1, 1);
  in.push_back(random_tensor({1, s.k, p, p}, 703));
  expect_fp32(fused_conv_case(s, in), "Z [1, K, H, W] broadcast over batch 3");
  in[3] = random_tensor({3, s.k, 1, 1}, 704);
  expect_fp32(fused_conv_case(s, in), "Z [N, K, 1, 1] broadcast over space");
  s.y_cl = true;
  expect_fp32(fused_conv_case(s, in), "Z [N, K, 1, 1] broadcast, y channels-last");
}

TEST(GpuConv, FusedConvBFloat16) {
  INGOT_REQUIRE_GPU();
  ConvSpec s;
  s.what = "bf16 3x3 z relu";
  s.n = 2, s.c = 16, s.k = 16, s.z = true, s.act = "Relu";
  auto in = conv_inputs(s, 800);
  expect_half(DType::kBFloat16, in, [&](const std::vector<Tensor>& v) { return fused_conv_case(s, v); }, s.what);
  s.what = "bf16 depthwise hardswish channels-last";
  s.c = s.k = s.group = 16, s.z = false, s.act = "HardSwish", s.x_cl = s.y_cl = true;
  in = conv_inputs(s, 810);
  expect_half(DType::kBFloat16, in, [&](const std::vector<Tensor>& v) { return fused_conv_case(s, v); }, s.what);
}

Case plain_conv_case(const ConvSpec& s, const std::vector<Tensor>& in, const Attributes& a) {
  std::vector<Tensor> v(in.begin(), in.begin() + 3);
  if (!v[2].defined()) v.pop_back();
  return make_case("Conv", v, {1, 2}, a);
}

TEST(GpuConv, Conv) {
  INGOT_REQUIRE_GPU();
  ConvSpec s;
  s.n = 3, s.c = 6, s.k = 10, s.h = 13, s.w = 11, s.stride = 2;
  auto in = conv_inputs(s, 900);
  Attributes a = conv_attrs(s, false);
  expect_fp32(plain_conv_case(s, in, a), "Conv 3x3 s2 bias");
  expect_half(DType::kFloat16, in, [&](const std::vector<Tensor>& v) { return plain_conv_case(s, v, a); },
              "Conv 3x3 s2 bias");
  s.bias = false, s.group = 2, s.dil = 2, s.pad = 2, s.stride = 1;
  in = conv_inputs(s, 910);
  a = conv_attrs(s, false);
  expect_fp32(plain_conv_case(s, in, a), "Conv grouped dilated, no bias");

  // auto_pad SAME_UPPER with odd input and stride 1: symmetric pads.
  Attributes same;
  same.set("auto_pad", string_attr("SAME_UPPER"));
  expect_fp32(make_case("Conv", {random_tensor({2, 4, 9, 7}, 920), random_tensor({5, 4, 3, 3}, 921, -0.3f, 0.3f)},
                        {1}, same),
              "Conv auto_pad SAME_UPPER stride 1");
}

TEST(GpuConv, Conv1D) {
  INGOT_REQUIRE_GPU();
  Attributes a;
  a.set("strides", ints_attr({2}));
  a.set("pads", ints_attr({1, 1}));
  a.set("group", int_attr(2));
  std::vector<Tensor> in = {random_tensor({3, 8, 29}, 1000), random_tensor({6, 4, 3}, 1001, -0.3f, 0.3f),
                            random_tensor({6}, 1002)};
  expect_fp32(make_case("Conv", in, {1, 2}, a), "Conv 1-D s2 grouped");
  a.set("activation", string_attr("Relu"));
  a.set("activation_params", floats_attr({}));
  a.set("x_channels_last", int_attr(1));
  a.set("y_channels_last", int_attr(1));
  in[0] = random_tensor({3, 29, 8}, 1003);
  expect_fp32(make_case("FusedConv", in, {1, 2}, a, 1, "ingot"), "FusedConv 1-D channels-last");
}

TEST(GpuConv, UnsupportedConvsRunOnCpu) {
  INGOT_REQUIRE_GPU();
  // Asymmetric pads that change the output size: cuDNN pads symmetrically, so supports() refuses.
  Attributes a;
  a.set("pads", ints_attr({0, 0, 1, 1}));
  a.set("strides", ints_attr({2, 2}));
  expect_fp32(make_case("Conv", {random_tensor({1, 4, 10, 10}, 1100), random_tensor({6, 4, 3, 3}, 1101, -0.3f, 0.3f)},
                        {1}, a),
              "Conv asymmetric pads", Where::kCpu);
  // Asymmetric pads whose extra row/column no window reads: run on the GPU.
  a.set("pads", ints_attr({1, 1, 2, 2}));
  a.set("strides", ints_attr({2, 2}));
  expect_fp32(make_case("Conv", {random_tensor({1, 4, 9, 9}, 1102), random_tensor({6, 4, 3, 3}, 1103, -0.3f, 0.3f)},
                        {1}, a),
              "Conv unread asymmetric end pads");
  // 3-D convolutions are refused.
  Attributes a3;
  a3.set("pads", ints_attr({1, 1, 1, 1, 1, 1}));
  expect_fp32(make_case("Conv", {random_tensor({1, 3, 5, 6, 7}, 1104), random_tensor({4, 3, 3, 3, 3}, 1105, -0.2f, 0.2f)},
                        {1}, a3),
              "Conv 3-D", Where::kCpu);
}

// ---------------------------------------------------------------------------------------------
// Pools

Attributes pool_attrs(std::vector<int64_t> k, std::vector<int64_t> st, std::vector<int64_t> pads, bool ceil = false) {
  Attributes a;
  a.set("kernel_shape", ints_attr(std::move(k)));
  if (!st.empty()) a.set("strides", ints_attr(std::move(st)));
  if (!pads.empty()) a.set("pads", ints_attr(std::move(pads)));
  if (ceil) a.set("ceil_mode", int_attr(1));
  return a;
}

void check_pool(const std::string& op, const Shape& x, const Attributes& a, const std::string& what, uint32_t seed) {
  std::vector<Tensor> in = {random_tensor(x, seed, -2.f, 2.f)};
  expect_fp32(make_case(op, in, {}, a), op + " " + what);
  expect_half(DType::kFloat16, in, [&](const std::vector<Tensor>& v) { return make_case(op, v, {}, a); },
              op + " " + what);
}

TEST(GpuConv, MaxPool) {
  INGOT_REQUIRE_GPU();
  check_pool("MaxPool", {2, 8, 112, 112}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), "ResNet 3x3 s2 p1", 1200);
  check_pool("MaxPool", {3, 5, 13, 11}, pool_attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, true), "ceil_mode 13x11", 1210);
  check_pool("MaxPool", {1, 4, 12, 10}, pool_attrs({2, 3}, {2, 2}, {1, 0, 1, 2}, true), "ceil_mode uneven pads", 1220);
  Attributes dil = pool_attrs({3, 3}, {1, 1}, {2, 2, 2, 2});
  dil.set("dilations", ints_attr({2, 2}));
  check_pool("MaxPool", {2, 3, 9, 8}, dil, "dilation 2", 1230);
  check_pool("MaxPool", {2, 3, 17}, pool_attrs({4}, {3}, {1, 2}), "1-D", 1240);
  check_pool("MaxPool", {1, 2, 5, 6, 7}, pool_attrs({2, 2, 3}, {2, 2, 2}, {0, 1, 1, 0, 0, 1}), "3-D", 1250);
  Attributes same = pool_attrs({3, 3}, {2, 2}, {});
  same.set("auto_pad", string_attr("SAME_UPPER"));
  check_pool("MaxPool", {1, 3, 10, 9}, same, "auto_pad SAME_UPPER", 1260);
  // NaN inputs are not compared: the CUDA kernel propagates a NaN through its window, as
  // PyTorch does, while the CPU reference (oneDNN's pooling) skips it.
}

TEST(GpuConv, MaxPoolIndicesRunOnCpu) {
  INGOT_REQUIRE_GPU();
  expect_fp32(make_case("MaxPool", {random_tensor({1, 3, 8, 8}, 1300)}, {}, pool_attrs({2, 2}, {2, 2}, {}), 2),
              "MaxPool with Indices", Where::kCpu);
}

TEST(GpuConv, AveragePool) {
  INGOT_REQUIRE_GPU();
  for (int include : {0, 1}) {
    const std::string inc = include ? " count_include_pad" : "";
    Attributes a = pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1});
    a.set("count_include_pad", int_attr(include));
    check_pool("AveragePool", {2, 4, 13, 11}, a, "3x3 s2 p1" + inc, 1400 + uint32_t(include));
    Attributes c = pool_attrs({3, 2}, {2, 2}, {1, 0, 0, 1}, true);
    c.set("count_include_pad", int_attr(include));
    check_pool("AveragePool", {1, 3, 10, 9}, c, "ceil_mode uneven pads" + inc, 1410 + uint32_t(include));
    Attributes d = pool_attrs({2, 2}, {1, 1}, {1, 1, 1, 1});
    d.set("dilations", ints_attr({2, 2}));
    d.set("count_include_pad", int_attr(include));
    check_pool("AveragePool", {2, 2, 7, 7}, d, "dilation 2" + inc, 1420 + uint32_t(include));
  }
  check_pool("AveragePool", {2, 3, 19}, pool_attrs({5}, {2}, {2, 2}), "1-D", 1430);
}

TEST(GpuConv, GlobalPools) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1500;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (const Shape& x : std::vector<Shape>{{3, 64, 7, 7}, {2, 5, 13, 11}, {1, 3, 300, 300}, {2, 6, 17}, {1, 2, 3, 4, 5}})
      check_pool(op, x, {}, shape_str(x), seed += 10);
  }
}

// ---------------------------------------------------------------------------------------------
// Reductions

Attributes reduce_attrs(std::optional<std::vector<int64_t>> axes, int keepdims) {
  Attributes a;
  if (axes) a.set("axes", ints_attr(*axes));
  a.set("keepdims", int_attr(keepdims));
  return a;
}

void check_reduce(const std::string& op, const Shape& x, std::optional<std::vector<int64_t>> axes, int keepdims,
                  uint32_t seed) {
  // Small values keep sums of squares of the long rows inside float16's range.
  std::vector<Tensor> in = {random_tensor(x, seed, -0.5f, 0.5f)};
  // Opset 13 (17 for ReduceSum would need the axes input): axes as the attribute.
  const int opset = 13;
  Attributes a = reduce_attrs(op == "ReduceSum" ? std::nullopt : axes, keepdims);
  std::string what = op + " " + shape_str(x) + " axes ";
  if (axes)
    for (int64_t v : *axes) what += std::to_string(v) + ",";
  what += " keepdims " + std::to_string(keepdims);
  auto make = [&](const std::vector<Tensor>& v) {
    std::vector<Tensor> ins = v;
    std::set<int> consts;
    if (op == "ReduceSum" && axes) {
      Tensor t(DType::kInt64, Shape{int64_t(axes->size())});
      for (size_t i = 0; i < axes->size(); ++i) t.data<int64_t>()[i] = (*axes)[i];
      ins.push_back(t);
      consts.insert(1);
    }
    return make_case(op, ins, consts, a, 1, "", opset);
  };
  expect_fp32(make(in), what);
  expect_half(DType::kFloat16, in, make, what);
}

TEST(GpuConv, ReduceOverAxes) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 1700;
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL2"}) {
    check_reduce(op, {3, 64, 7, 7}, std::vector<int64_t>{2, 3}, 1, seed += 10);   // global average pooling
    check_reduce(op, {2, 5, 13, 11}, std::vector<int64_t>{-1, -2}, 0, seed += 10);
    check_reduce(op, {4, 6, 9, 5}, std::vector<int64_t>{1}, 0, seed += 10);        // inner kept: columns
    check_reduce(op, {4, 6, 9, 5}, std::vector<int64_t>{0, 2}, 1, seed += 10);     // non-adjacent axes
    check_reduce(op, {4, 6, 9, 5}, std::vector<int64_t>{1, 3}, 0, seed += 10);     // rows with two runs
    check_reduce(op, {3, 1, 40000}, std::nullopt, 0, seed += 10);                   // everything: split rows
    check_reduce(op, {2, 3, 70000}, std::vector<int64_t>{2}, 1, seed += 10);        // few long rows: split
    check_reduce(op, {5, 1, 7}, std::vector<int64_t>{1}, 1, seed += 10);            // only a size-1 axis
  }
}

TEST(GpuConv, ReduceVariants) {
  INGOT_REQUIRE_GPU();
  Tensor x = random_tensor({3, 4, 5}, 1900, -2.f, 2.f);
  // Opset 18: axes as a constant input; noop_with_empty_axes with no axes copies the input.
  Tensor axes(DType::kInt64, Shape{2});
  axes.data<int64_t>()[0] = 0, axes.data<int64_t>()[1] = -1;
  expect_fp32(make_case("ReduceMax", {x, axes}, {1}, reduce_attrs(std::nullopt, 1), 1, "", 18), "ReduceMax opset 18");
  Attributes noop = reduce_attrs(std::nullopt, 1);
  noop.set("noop_with_empty_axes", int_attr(1));
  expect_fp32(make_case("ReduceMean", {x}, {}, noop, 1, "", 18), "ReduceMean noop_with_empty_axes");
  expect_fp32(make_case("ReduceMean", {x}, {}, reduce_attrs(std::nullopt, 0), 1, "", 18), "ReduceMean opset 18 all axes");
  // A NaN sticks in Max and Min.
  Tensor n = random_tensor({2, 3, 50}, 1910);
  n.data<float>()[60] = std::nanf("");
  for (const char* op : {"ReduceMax", "ReduceMin"})
    expect_fp32(make_case(op, {n}, {}, reduce_attrs(std::vector<int64_t>{2}, 1), 1, "", 13), std::string(op) + " NaN");
  // Integer reductions run on the CPU.
  Tensor i(DType::kInt64, Shape{2, 3});
  for (int64_t k = 0; k < 6; ++k) i.data<int64_t>()[k] = k * 7 - 11;
  expect_fp32(make_case("ReduceMax", {i}, {}, reduce_attrs(std::vector<int64_t>{1}, 0), 1, "", 13),
              "ReduceMax int64", Where::kCpu);
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization (inference)

TEST(GpuConv, BatchNormalization) {
  INGOT_REQUIRE_GPU();
  for (const Shape& x : std::vector<Shape>{{2, 6, 9, 7}, {3, 5}, {1, 4, 10}}) {
    const int64_t c = x[1];
    std::vector<Tensor> in = {random_tensor(x, 2000, -2.f, 2.f), random_tensor({c}, 2001, 0.5f, 1.5f),
                              random_tensor({c}, 2002), random_tensor({c}, 2003), random_tensor({c}, 2004, 0.2f, 2.f)};
    Attributes a;
    a.set("epsilon", float_attr(1e-3f));
    expect_fp32(make_case("BatchNormalization", in, {1, 2, 3, 4}, a), "BatchNormalization constant " + shape_str(x));
    expect_fp32(make_case("BatchNormalization", in, {}, a), "BatchNormalization fed " + shape_str(x));
    expect_half(DType::kFloat16, in,
                [&](const std::vector<Tensor>& v) { return make_case("BatchNormalization", v, {1, 2, 3, 4}, a); },
                "BatchNormalization " + shape_str(x));
  }
}

}  // namespace
}  // namespace ingot::testing
