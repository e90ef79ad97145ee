// The channels-last layouts around pools on CUDA against the CPU reference, through the Engine:
// window pools with `channels_last` and global pools with `x_channels_last` as single nodes
// (every vector width: C a multiple of 8, of 4, of 2, odd), the small-channel NCHW -> NHWC
// transpose in front of a convolution (C = 1, 3, 4), and ResNet-like stem and head models
// whose pools the optimizer makes channels-last. float32 is compared within 1e-4 (relative and
// absolute); float16 (the engine's precision conversion) within 1e-2 scaled by the output's
// RMS. Every case also checks that nothing fell back to the CPU.
#include <cmath>

#include "../ops/graph_builder.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Ran {
  std::vector<Tensor> out;
  std::vector<std::string> fallbacks;  // "node: reason" of every node that ran on the CPU
  std::shared_ptr<Engine> engine;
};

Ran run_on(const Model& m, const std::map<std::string, Tensor>& feeds, const std::string& device,
           const std::string& precision = "fp32") {
  EngineOptions o;
  o.device = device;
  o.precision = precision;
  Ran r;
  auto e = Engine::from_model(m, o);
  EXPECT_TRUE(e.has_value()) << device << " " << precision << ": " << e.status().message();
  if (!e) return r;
  r.engine = *e;
  auto out = (*e)->create_context()->run(feeds);
  EXPECT_TRUE(out.has_value()) << device << " " << precision << ": " << out.status().message();
  if (out)
    for (auto& nt : *out) r.out.push_back(nt.tensor);
  if ((*e)->device())
    for (const FallbackOp& f : (*e)->device()->fallback_ops()) r.fallbacks.push_back(f.node + ": " + f.reason);
  return r;
}

double rms(const Tensor& t) {
  double sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sq += element(t, i) * element(t, i);
  return t.numel() ? std::sqrt(sq / double(t.numel())) : 0;
}

// CUDA in float32 and float16 against the CPU in float32; returns the CUDA fp32 engine.
std::shared_ptr<Engine> expect_matches_cpu(const Model& m, const std::map<std::string, Tensor>& feeds,
                                           const std::string& what) {
  Ran ref = run_on(m, feeds, "cpu");
  std::shared_ptr<Engine> fp32;
  for (const char* precision : {"fp32", "fp16"}) {
    const std::string w = what + " " + precision;
    Ran got = run_on(m, feeds, "cuda", precision);
    EXPECT_EQ(got.out.size(), ref.out.size()) << w;
    if (got.out.size() != ref.out.size()) continue;
    const bool half = std::string(precision) == "fp16";
    for (size_t i = 0; i < ref.out.size(); ++i) {
      const double atol = half ? 1e-2 * std::max(1.0, rms(ref.out[i])) : 1e-4;
      expect_close(got.out[i], ref.out[i], atol, half ? 1e-2 : 1e-4, w + ", output " + std::to_string(i));
    }
    std::string fell;
    for (const auto& f : got.fallbacks) fell += f + "; ";
    EXPECT_TRUE(got.fallbacks.empty()) << w << ": ran on the CPU: " << fell;
    if (!half) fp32 = got.engine;
  }
  return fp32;
}

// Builds small graphs node by node (node i is named <Op><i>); inputs keep their feed.
struct Builder : GraphBuilder {
  std::map<std::string, Tensor> feeds;
  Builder() : GraphBuilder("test:pool", 17) {}
  ValueId input(const std::string& name, Tensor t) {
    ValueId id = GraphBuilder::input(name, t.dtype(), t.shape());
    feeds[name] = std::move(t);
    return id;
  }
  ValueId init(const std::string& name, Tensor t) { return constant(name, std::move(t)); }
};

Attributes pool_attrs(std::vector<int64_t> k, std::vector<int64_t> strides, std::vector<int64_t> pads,
                      bool ceil = false) {
  Attributes a;
  a.set("kernel_shape", ints_attr(std::move(k)));
  a.set("strides", ints_attr(std::move(strides)));
  a.set("pads", ints_attr(std::move(pads)));
  if (ceil) a.set("ceil_mode", int_attr(1));
  return a;
}

// [N, C, spatial...] stored channels-last: [N, spatial..., C].
Shape channels_last(const Shape& nchw) {
  Shape s = {nchw[0]};
  s.insert(s.end(), nchw.begin() + 2, nchw.end());
  s.push_back(nchw[1]);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Channels-last pools as single nodes

void check_window_pool(const std::string& op, const Shape& nchw, Attributes a, const std::string& what,
                       uint32_t seed) {
  a.set("channels_last", int_attr(1));
  Builder b;
  b.output(b.node(op, {b.input("x", random_tensor(channels_last(nchw), seed, -2.f, 2.f))}, a));
  expect_matches_cpu(b.m, b.feeds, op + " channels-last " + shape_str(nchw) + " " + what);
}

TEST(GpuPool, MaxPoolChannelsLast) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 100;
  // C = 64 (16-byte accesses in both types), 12 (fp16: 4-wide), 6 (2-wide), 5 and 3 (scalar).
  for (int64_t c : {64, 12, 6, 5, 3}) {
    check_window_pool("MaxPool", {2, c, 28, 28}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}), "ResNet 3x3/2 p1",
                      seed += 10);
    check_window_pool("MaxPool", {3, c, 13, 11}, pool_attrs({3, 3}, {2, 2}, {0, 0, 0, 0}, true), "ceil_mode",
                      seed += 10);
  }
  check_window_pool("MaxPool", {1, 8, 12, 10}, pool_attrs({2, 3}, {2, 2}, {1, 0, 1, 2}, true), "ceil uneven pads",
                    seed += 10);
  Attributes dil = pool_attrs({3, 3}, {1, 1}, {2, 2, 2, 2});
  dil.set("dilations", ints_attr({2, 2}));
  check_window_pool("MaxPool", {2, 16, 9, 8}, dil, "dilation 2", seed += 10);
  check_window_pool("MaxPool", {2, 24, 17}, pool_attrs({4}, {3}, {1, 2}), "1-D", seed += 10);
  check_window_pool("MaxPool", {1, 8, 5, 6, 7}, pool_attrs({2, 2, 3}, {2, 2, 2}, {0, 1, 1, 0, 0, 1}), "3-D",
                    seed += 10);
  Attributes same;
  same.set("kernel_shape", ints_attr({3, 3}));
  same.set("strides", ints_attr({2, 2}));
  same.set("auto_pad", string_attr("SAME_UPPER"));
  check_window_pool("MaxPool", {1, 16, 10, 9}, same, "auto_pad SAME_UPPER", seed += 10);
}

TEST(GpuPool, AveragePoolChannelsLast) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 300;
  for (int include : {0, 1}) {
    const std::string inc = include ? " count_include_pad" : "";
    for (int64_t c : {32, 12, 5}) {
      Attributes a = pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1});
      a.set("count_include_pad", int_attr(include));
      check_window_pool("AveragePool", {2, c, 13, 11}, a, "3x3/2 p1" + inc, seed += 10);
      Attributes ceil = pool_attrs({3, 2}, {2, 2}, {1, 0, 0, 1}, true);
      ceil.set("count_include_pad", int_attr(include));
      check_window_pool("AveragePool", {1, c, 10, 9}, ceil, "ceil_mode uneven pads" + inc, seed += 10);
    }
    Attributes d = pool_attrs({2, 2}, {1, 1}, {1, 1, 1, 1});
    d.set("dilations", ints_attr({2, 2}));
    d.set("count_include_pad", int_attr(include));
    check_window_pool("AveragePool", {2, 8, 7, 7}, d, "dilation 2" + inc, seed += 10);
    Attributes one_d = pool_attrs({5}, {2}, {2, 2});
    one_d.set("count_include_pad", int_attr(include));
    check_window_pool("AveragePool", {2, 16, 19}, one_d, "1-D" + inc, seed += 10);
  }
}

TEST(GpuPool, GlobalPoolsChannelsLast) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 500;
  Attributes a;
  a.set("x_channels_last", int_attr(1));
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    // ResNet-50's head, more than one block of chunks per image, every vector width, 1-D, 3-D.
    for (const Shape& x : std::vector<Shape>{{4, 2048, 7, 7}, {3, 264, 5, 6}, {2, 12, 13, 11}, {2, 6, 9, 9},
                                             {3, 5, 300, 3}, {2, 16, 17}, {1, 8, 3, 4, 5}}) {
      Builder b;
      b.output(b.node(op, {b.input("x", random_tensor(channels_last(x), seed += 10, -2.f, 2.f))}, a));
      expect_matches_cpu(b.m, b.feeds, std::string(op) + " channels-last " + shape_str(x));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// NCHW -> NHWC with few channels (the image input of a network's first convolution)

Attributes fused_conv_attrs(int64_t k, int64_t stride, int64_t pad, bool x_cl, bool z_cl, bool y_cl) {
  Attributes a;
  a.set("kernel_shape", ints_attr({k, k}));
  a.set("strides", ints_attr({stride, stride}));
  a.set("pads", ints_attr({pad, pad, pad, pad}));
  a.set("activation", string_attr("Relu"));
  Attribute params;
  params.kind = Attribute::Kind::kFloats;
  a.set("activation_params", params);
  if (x_cl) a.set("x_channels_last", int_attr(1));
  if (z_cl) a.set("z_channels_last", int_attr(1));
  if (y_cl) a.set("y_channels_last", int_attr(1));
  return a;
}

TEST(GpuPool, SmallChannelTransposes) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 700;
  for (int64_t c : {1, 3, 4}) {
    for (bool y_cl : {false, true}) {
      // float16 runs NHWC: X (C planes) is transposed into the workspace; float32 with a
      // channels-last Y and K = 4 output channels transposes the conv output the same way.
      Builder b;
      ValueId x = b.input("x", random_tensor({3, c, 23, 19}, seed += 10));
      ValueId w = b.init("w", random_tensor({4, c, 7, 7}, seed + 1, -0.3f, 0.3f));
      ValueId bias = b.init("b", random_tensor({4}, seed + 2));
      b.output(b.node("FusedConv", {x, w, bias}, fused_conv_attrs(7, 2, 3, false, false, y_cl), "ingot"));
      expect_matches_cpu(b.m, b.feeds, "stem conv C=" + std::to_string(c) + (y_cl ? " y channels-last" : ""));
    }
    // float16: a fed filter is repacked KCRS -> KRSC on the device (C/group rows per filter).
    // float32: a residual in either layout rides along the transpose of the output.
    for (bool z_cl : {false, true}) {
      Builder b;
      ValueId x = b.input("x", random_tensor({2, c, 9, 8}, seed += 10));
      ValueId w = b.input("w", random_tensor({5, c, 3, 3}, seed + 1, -0.3f, 0.3f));
      ValueId z = b.input("z", random_tensor(z_cl ? Shape{2, 9, 8, 5} : Shape{2, 5, 9, 8}, seed + 2));
      b.output(b.node("FusedConv", {x, w, kNoValue, z}, fused_conv_attrs(3, 1, 1, false, z_cl, true), "ingot"));
      expect_matches_cpu(b.m, b.feeds,
                         "fed filter, Z " + std::string(z_cl ? "NHWC" : "NCHW") + ", C=" + std::to_string(c));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ResNet-like models through the optimizer

Tensor weight(int64_t k, int64_t c, int64_t ks, uint32_t seed) {
  const float r = 1.f / std::sqrt(float(c * ks * ks));
  return random_tensor({k, c, ks, ks}, seed, -r, r);
}

Attributes conv_attrs(int64_t stride, int64_t pad) {
  Attributes a;
  a.set("strides", ints_attr({stride, stride}));
  a.set("pads", ints_attr({pad, pad, pad, pad}));
  return a;
}

int64_t attr_of(const Engine& e, const std::string& op, const char* name) {
  for (const Node& n : e.model().graph.nodes)
    if (n.op_type == op) return n.attrs.get_int(name, 0);
  return -1;
}

TEST(GpuPool, ResNetStemAndHead) {
  INGOT_REQUIRE_GPU();
  // conv 7x7/2 + relu -> MaxPool 3x3/2 p1 -> {1x1 downsample, 3x3 conv} + add + relu ->
  // 3x3 conv + relu -> GlobalAveragePool -> Flatten -> Gemm.
  Builder b;
  ValueId x = b.input("x", random_tensor({2, 3, 45, 41}, 900));
  ValueId stem = b.node("Relu", {b.node("Conv", {x, b.init("w1", weight(16, 3, 7, 901))}, conv_attrs(2, 3))});
  ValueId pool = b.node("MaxPool", {stem}, pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  ValueId down = b.node("Conv", {pool, b.init("w2", weight(24, 16, 1, 902))}, conv_attrs(1, 0));
  ValueId body = b.node("Conv", {pool, b.init("w3", weight(24, 16, 3, 903))}, conv_attrs(1, 1));
  ValueId block = b.node("Relu", {b.node("Add", {body, down})});
  ValueId last = b.node("Relu", {b.node("Conv", {block, b.init("w4", weight(40, 24, 3, 904))}, conv_attrs(2, 1))});
  ValueId flat = b.node("Flatten", {b.node("GlobalAveragePool", {last})});
  Attributes gemm;
  gemm.set("transB", int_attr(1));
  ValueId fc = b.init("fc", random_tensor({10, 40}, 905, -0.2f, 0.2f));
  b.output(b.node("Gemm", {flat, fc, b.init("fcb", random_tensor({10}, 906))}, gemm));
  auto e = expect_matches_cpu(b.m, b.feeds, "ResNet stem and head");
  ASSERT_TRUE(e);
  EXPECT_EQ(attr_of(*e, "MaxPool", "channels_last"), 1);
  EXPECT_EQ(attr_of(*e, "GlobalAveragePool", "x_channels_last"), 1);
}

}  // namespace
}  // namespace ingot::testing
