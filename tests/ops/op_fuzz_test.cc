// Seeded random parameters for ops whose geometry comes from attributes and input values
// (Col2Im, CenterCropPad, AffineGrid, MaxRoiPool, DeformConv, LpNormalization, Multinomial,
// Bernoulli): every run either succeeds or fails with a message, never crashes or reads out of
// bounds (the CPU suite also runs under ASan + UBSan).
#include <functional>
#include <random>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

class Fuzz {
 public:
  explicit Fuzz(uint32_t seed) : rng_(seed) {}
  int64_t in(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  std::vector<int64_t> ints(size_t n, int64_t lo, int64_t hi) {
    std::vector<int64_t> v(n);
    for (auto& x : v) x = in(lo, hi);
    return v;
  }
  Shape shape(size_t rank, int64_t lo, int64_t hi) { return Shape(ints(rank, lo, hi)); }
  Tensor floats(const Shape& s, float lo = -3.f, float hi = 3.f) { return random_tensor(s, uint32_t(in(0, 1 << 30)), lo, hi); }
  Tensor int64s(const std::vector<int64_t>& v) { return make<int64_t>({int64_t(v.size())}, v); }

 private:
  std::mt19937 rng_;
};

// Runs the node and accepts either outcome (a failure must say something); counts the runs that
// got through, so that the test can tell the parameters reach the computation.
std::map<std::string, int> ran;
void run_any(const std::string& op, const std::vector<Tensor>& in, Attributes a, int opset) {
  Status st = run_status(op, in, 1, std::move(a), opset);
  if (st.is_ok()) ++ran[op];
  else EXPECT_FALSE(st.message().empty()) << op;
}

TEST(OpFuzz, GeometryFromAttributesAndValues) {
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    Fuzz f(seed);
    // Each op gets a valid configuration, one parameter of it spoiled in a quarter of the seeds.
    const bool spoil = f.in(0, 3) == 0;
    {  // Col2Im
      const size_t k = size_t(f.in(1, 2));
      std::vector<int64_t> image = f.ints(k, 1, 8), block(k), st = f.ints(k, 1, 2), dl = f.ints(k, 1, 2), pads = f.ints(2 * k, 0, 2);
      int64_t blocks = 1, l = 1;
      for (size_t d = 0; d < k; ++d) {
        block[d] = std::min<int64_t>(f.in(1, 3), (image[d] + pads[d] + pads[k + d] - 1) / dl[d] + 1);
        blocks *= block[d];
        l *= (image[d] + pads[d] + pads[k + d] - dl[d] * (block[d] - 1) - 1) / st[d] + 1;
      }
      if (spoil && f.in(0, 1)) ++l;            // one column too many
      else if (spoil) image[0] = f.in(-1, 0);  // an empty or negative image
      Attributes a;
      a.set("strides", ints_attr(st));
      a.set("dilations", ints_attr(dl));
      a.set("pads", ints_attr(pads));
      run_any("Col2Im", {f.floats({f.in(1, 2), f.in(1, 3) * blocks, l}), f.int64s(image), f.int64s(block)}, a, 18);
    }
    {  // CenterCropPad
      const Shape s = f.shape(size_t(f.in(0, 4)), 0, 6);
      Attributes a;
      if (f.in(0, 1)) a.set("axes", ints_attr(f.ints(size_t(f.in(0, 4)), -5, 4)));
      run_any("CenterCropPad", {f.floats(s), f.int64s(f.ints(size_t(f.in(0, 4)), -2, 9))}, a, 18);
    }
    {  // AffineGrid
      const int64_t k = f.in(2, 3), n = f.in(1, 3);
      std::vector<int64_t> size = {n, f.in(1, 3)};
      for (int64_t d = 0; d < k; ++d) size.push_back(f.in(0, 5));
      if (spoil) size[size_t(f.in(0, int64_t(size.size()) - 1))] = -1;
      Attributes a;
      a.set("align_corners", int_attr(f.in(0, 1)));
      run_any("AffineGrid", {f.floats({n, k, k + 1}), f.int64s(size)}, a, 20);
    }
    {  // MaxRoiPool: rois anywhere (negative, past the image, reversed)
      const int64_t n = f.in(1, 2), rois = f.in(0, 4);
      Attributes a;
      a.set("pooled_shape", ints_attr({f.in(spoil ? 0 : 1, 3), f.in(1, 3)}));
      a.set("spatial_scale", float_attr(float(f.in(1, 4)) / 2.f));
      Tensor r = f.floats({rois, 5}, -4.f, 12.f);
      for (int64_t i = 0; i < rois; ++i) r.data<float>()[i * 5] = float(f.in(0, n - 1));
      run_any("MaxRoiPool", {f.floats({n, f.in(1, 3), f.in(1, 7), f.in(1, 7)}), r}, a, 1);
    }
    {  // DeformConv: offsets far off the image as well as near it
      const int64_t g = f.in(1, 2), c = g * f.in(1, 2), oc = g * f.in(1, 2), og = f.in(0, 1) ? g : 1, kh = f.in(1, 3), kw = f.in(1, 3);
      const std::vector<int64_t> pads = f.ints(4, 0, 1), st = f.ints(2, 1, 2);
      const int64_t n = f.in(1, 2), h = f.in(kh, 6), w = f.in(kw, 6);
      const int64_t oh = (h + pads[0] + pads[2] - kh) / st[0] + 1, ow = (w + pads[1] + pads[3] - kw) / st[1] + 1;
      Attributes a;
      a.set("group", int_attr(g));
      a.set("offset_group", int_attr(og));
      a.set("pads", ints_attr(pads));
      a.set("strides", ints_attr(st));
      Tensor off = f.floats({n, og * kh * kw * 2, oh + (spoil ? 1 : 0), ow}, -20.f, 20.f);
      run_any("DeformConv", {f.floats({n, c, h, w}), f.floats({oc, c / g, kh, kw}), off, f.floats({oc}),
                             f.floats({n, og * kh * kw, oh + (spoil ? 1 : 0), ow}, 0.f, 1.f)}, a, 19);
    }
    {  // LpNormalization, Multinomial, Bernoulli
      Attributes lp;
      lp.set("axis", int_attr(f.in(-4, 3)));
      lp.set("p", int_attr(f.in(0, 3)));
      run_any("LpNormalization", {f.floats(f.shape(size_t(f.in(0, 3)), 0, 5))}, lp, 17);
      Attributes mn;
      mn.set("sample_size", int_attr(f.in(-1, 5)));
      run_any("Multinomial", {f.floats(f.shape(size_t(f.in(1, 3)), 0, 4), -50.f, 50.f)}, mn, 17);
      run_any("Bernoulli", {f.floats(f.shape(2, 0, 4), -0.2f, 1.2f)}, {}, 15);
    }
  }
  // Every op must also have run through (not only been refused) in a good share of the seeds.
  for (const char* op : {"Col2Im", "CenterCropPad", "AffineGrid", "MaxRoiPool", "DeformConv", "LpNormalization", "Multinomial",
                         "Bernoulli"})
    EXPECT_GE(ran[op], 10) << op << " ran " << ran[op] << " of 150 times";
}

// Every CPU kernel with random inputs, and in half the seeds common attributes (axis, axes, perm,
// pads, mode, ...) at random, often wrong, values: 0 to 5 inputs of
// random dtype (float32, float16, int64, int32, bool), rank 0 to 4 and dims 0 to 3, small
// values (so that index-like inputs are often in range), at a random opset. Most runs are
// refused; none may crash, hang or read out of bounds (the CPU suite also runs under ASan +
// UBSan), and a refusal must say something.
TEST(OpFuzz, EveryCpuOpWithRandomInputs) {
  const DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kInt32, DType::kBool};
  const int kOpsets[] = {11, 13, 17, 18, 20};
  int ran_any = 0;
  for (const std::string& qualified : KernelRegistry::instance().ops("cpu")) {
    const size_t colon = qualified.find(':');
    const std::string domain = qualified.substr(0, colon), op = qualified.substr(colon + 1);
    for (uint32_t seed = 1; seed <= 100; ++seed) {
      Fuzz f(seed * 7919u + uint32_t(std::hash<std::string>()(qualified)));
      std::vector<Tensor> in;
      for (int64_t i = 0, n = f.in(0, 5); i < n; ++i) {
        const DType t = kTypes[f.in(0, 4)];
        Tensor x(t, f.shape(size_t(f.in(0, 4)), 0, 3));
        for (int64_t e = 0; e < x.numel(); ++e) {
          const int64_t v = f.in(-3, 5);
          switch (t) {
            case DType::kFloat32: x.data<float>()[e] = float(v) * 0.75f; break;
            case DType::kFloat16: x.data<float16>()[e] = float16(float(v) * 0.75f); break;
            case DType::kInt64: x.data<int64_t>()[e] = v; break;
            case DType::kInt32: x.data<int32_t>()[e] = int32_t(v); break;
            default: x.data<bool>()[e] = v > 1; break;
          }
        }
        in.push_back(std::move(x));
      }
      const int nout = int(f.in(1, 2));
      // Half the seeds also set attributes that many ops read, to random (often wrong) values.
      Attributes a;
      if (seed % 2 == 0) {
        const char* const kInts[] = {"axis", "keepdims", "to", "group", "transA", "transB", "blocksize", "num_outputs",
                                     "upper", "exclusive", "reverse", "select_last_index", "largest", "sorted",
                                     "ceil_mode", "count_include_pad", "batch_dims", "center_point_box", "p"};
        const char* const kLists[] = {"axes", "perm", "kernel_shape", "strides", "pads", "dilations", "split", "shape",
                                      "starts", "ends", "output_padding", "output_shape", "pooled_shape"};
        const char* const kModes[] = {"constant", "reflect", "edge", "wrap", "nearest", "linear", "cubic", "DCR",
                                      "CRD", "bilinear", "avg", "max", "half_pixel", "garbage"};
        for (const char* name : kInts)
          if (f.in(0, 3) == 0) a.set(name, int_attr(f.in(-5, 12)));
        for (const char* name : kLists)
          if (f.in(0, 3) == 0) a.set(name, ints_attr(f.ints(size_t(f.in(0, 5)), -3, 4)));
        if (f.in(0, 1)) a.set("mode", string_attr(kModes[f.in(0, 13)]));
        if (f.in(0, 2) == 0) a.set("reduction", string_attr(f.in(0, 1) ? "max" : "mul"));
        if (f.in(0, 2) == 0) a.set("direction", string_attr(f.in(0, 1) ? "LEFT" : "RIGHT"));
        for (const char* name : {"epsilon", "alpha", "beta", "gamma", "scale", "bias", "lambd", "spatial_scale"})
          if (f.in(0, 3) == 0) a.set(name, float_attr(float(f.in(-4, 4)) * 0.5f));
      }
      auto e = Engine::from_model(single_node_model(op, in, nout, a, kOpsets[f.in(0, 4)], domain));
      std::string message;
      if (!e) {
        message = e.status().message();
      } else {
        std::map<std::string, Tensor> feeds;
        for (size_t i = 0; i < in.size(); ++i) feeds["in" + std::to_string(i)] = in[i];
        auto out = (*e)->create_context()->run(feeds);
        if (out) ++ran_any;
        else message = out.status().message();
        if (out) continue;
      }
      EXPECT_FALSE(message.empty()) << qualified << " seed " << seed;
    }
  }
  EXPECT_GT(ran_any, 1000);  // the inputs reach the kernels' computations, not only their refusals
}

}  // namespace
}  // namespace ingot::testing
