// Col2Im (opset 18) against a gather-form reference (each image pixel sums the block entries
// that land on it), and the ONNX backend suite's basic case.
#include "op_test_util.h"

namespace ingot::testing {
namespace {

struct Col2ImCase {
  Shape image, block;
  std::vector<int64_t> dilations, pads, strides;  // empty: defaults
  int64_t n = 2, c = 3;
};

std::vector<int64_t> or_fill(const std::vector<int64_t>& v, size_t n, int64_t fill) {
  return v.empty() ? std::vector<int64_t>(n, fill) : v;
}

Tensor col2im_reference(const Tensor& x, const Col2ImCase& c) {
  const size_t k = c.image.size();
  auto dil = or_fill(c.dilations, k, 1), st = or_fill(c.strides, k, 1), pads = or_fill(c.pads, 2 * k, 0);
  std::vector<int64_t> grid(k);
  int64_t blocks = 1, pixels = 1, l_count = 1;
  for (size_t d = 0; d < k; ++d) {
    grid[d] = (c.image[d] + pads[d] + pads[k + d] - dil[d] * (c.block[d] - 1) - 1) / st[d] + 1;
    blocks *= c.block[d], pixels *= c.image[d], l_count *= grid[d];
  }
  Shape out{c.n, c.c};
  out.insert(out.end(), c.image.begin(), c.image.end());
  Tensor y(DType::kFloat32, out);
  for (int64_t nc = 0; nc < c.n * c.c; ++nc)
    for (int64_t p = 0; p < pixels; ++p) {
      std::vector<int64_t> pi(k);
      for (int64_t rest = p, d = int64_t(k) - 1; d >= 0; --d) pi[size_t(d)] = rest % c.image[size_t(d)], rest /= c.image[size_t(d)];
      double sum = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        int64_t l = 0, rest = b;
        std::vector<int64_t> bi(k);
        for (int64_t d = int64_t(k) - 1; d >= 0; --d) bi[size_t(d)] = rest % c.block[size_t(d)], rest /= c.block[size_t(d)];
        bool hit = true;
        for (size_t d = 0; d < k && hit; ++d) {
          const int64_t q = pi[d] + pads[d] - bi[d] * dil[d];
          hit = q >= 0 && q % st[d] == 0 && q / st[d] < grid[d];
          l = l * grid[d] + (hit ? q / st[d] : 0);
        }
        if (hit) sum += x.data<float>()[(nc * blocks + b) * l_count + l];
      }
      y.data<float>()[nc * pixels + p] = float(sum);
    }
  return y;
}

TEST(Col2Im, AgainstGatherReference) {
  const std::vector<Col2ImCase> cases = {
      {{5, 5}, {1, 5}, {}, {}, {}},
      {{6, 7}, {2, 3}, {}, {}, {}},
      {{9, 8}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 3}},
      {{10}, {3}, {3}, {2, 1}, {2}, 1, 2},
      {{4, 5, 6}, {2, 2, 3}, {1, 2, 1}, {0, 1, 1, 1, 0, 2}, {1, 1, 2}, 1, 2},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Col2ImCase& c = cases[ci];
    const size_t k = c.image.size();
    auto dil = or_fill(c.dilations, k, 1), st = or_fill(c.strides, k, 1), pads = or_fill(c.pads, 2 * k, 0);
    int64_t blocks = 1, l_count = 1;
    for (size_t d = 0; d < k; ++d) {
      blocks *= c.block[d];
      l_count *= (c.image[d] + pads[d] + pads[k + d] - dil[d] * (c.block[d] - 1) - 1) / st[d] + 1;
    }
    Tensor x = random_tensor({c.n, c.c * blocks, l_count}, uint32_t(ci + 1));
    Attributes a;
    if (!c.dilations.empty()) a.set("dilations", ints_attr(c.dilations));
    if (!c.pads.empty()) a.set("pads", ints_attr(c.pads));
    if (!c.strides.empty()) a.set("strides", ints_attr(c.strides));
    auto out = run_single_node("Col2Im", {x, make<int64_t>({int64_t(k)}, c.image), make<int64_t>({int64_t(k)}, c.block)}, 1, a, 18);
    ASSERT_EQ(out.size(), 1u);
    Tensor ref = col2im_reference(x, c);
    ASSERT_EQ(out[0].shape(), ref.shape()) << "case " << ci;
    for (int64_t i = 0; i < ref.numel(); ++i)
      ASSERT_NEAR(out[0].data<float>()[i], ref.data<float>()[i], 1e-6f) << "case " << ci << " at " << i;
  }
}

TEST(Col2Im, OnnxBasicCaseAndErrors) {
  // test_col2im of the ONNX backend suite (opset 18, not in Debian's 1.12 test data).
  Tensor x = make<float>({1, 5, 5}, {1, 6, 11, 16, 21, 2, 7, 12, 17, 22, 3, 8, 13, 18, 23, 4, 9, 14, 19, 24, 5, 0, 15, 20, 25});
  auto out = run_single_node("Col2Im", {x, make<int64_t>({2}, {5, 5}), make<int64_t>({2}, {1, 5})}, 1, {}, 18);
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 5, 5}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1,  2,  3,  4,  5,  6,  7,  8,  9,  0,  11, 12, 13,
                                                        14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}));
  // Integers sum too.
  Tensor xi = make<int32_t>({1, 2, 3}, {1, 2, 3, 10, 20, 30});
  auto oi = run_single_node("Col2Im", {xi, make<int64_t>({1}, {4}), make<int64_t>({1}, {2})}, 1, {}, 18);
  EXPECT_EQ(values<int32_t>(oi[0]), (std::vector<int32_t>{1, 12, 23, 30}));
  // Wrong column count, rows not a multiple of the block, bad attribute lengths.
  EXPECT_NE(run_error("Col2Im", {x, make<int64_t>({2}, {5, 6}), make<int64_t>({2}, {1, 5})}, 1, {}, 18).find("sliding positions are 10"),
            std::string::npos);
  EXPECT_NE(run_error("Col2Im", {x, make<int64_t>({2}, {5, 5}), make<int64_t>({2}, {2, 2})}, 1, {}, 18).find("not a multiple"),
            std::string::npos);
  Attributes bad;
  bad.set("strides", ints_attr({1, 1, 1}));
  EXPECT_NE(run_error("Col2Im", {x, make<int64_t>({2}, {5, 5}), make<int64_t>({2}, {1, 5})}, 1, bad, 18)
                .find("attribute 'strides' [1, 1, 1] has 3 entries; expected 2"),
            std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
