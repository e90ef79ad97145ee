// Tests for the oneDNN-backed kernels (MatMul, Gemm, Conv, ConvTranspose), pooling and the
// quantization ops, against naive references written here.
#include <cmath>

#include "ir/shape_util.h"
#include "op_test_util.h"

namespace ingot::testing {
namespace {

Attributes attrs(std::initializer_list<std::pair<std::string, Attribute>> l) {
  Attributes a;
  for (auto& [k, v] : l) a.set(k, v);
  return a;
}

// Runs a node (the plain kernel: the optimizer would turn Conv into ingot.FusedConv) and
// returns the Status of building + running it.
Status run_status(const std::string& op, const std::vector<Tensor>& inputs, int nout, Attributes a = {}, int opset = 17) {
  EngineOptions plain;
  plain.optimize = false;
  auto e = Engine::from_model(single_node_model(op, inputs, nout, std::move(a), opset), plain);
  if (!e) return e.status();
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds["in" + std::to_string(i)] = inputs[i];
  auto out = (*e)->create_context()->run(feeds);
  return out ? Status::ok() : out.status();
}

void expect_error(const Status& s, const std::string& fragment) {
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message();
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4) {
  ASSERT_EQ(got.shape(), want.shape()) << shape_str(got.shape()) << " vs " << shape_str(want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    float g = got.data<float>()[i], w = want.data<float>()[i];
    ASSERT_NEAR(g, w, tol * (1 + std::fabs(w))) << "at " << i;
  }
}

Tensor int_tensor(DType t, Shape s, uint32_t seed, int lo, int hi) {
  Tensor r(t, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < r.numel(); ++i) {
    if (t == DType::kUInt8) r.data<uint8_t>()[i] = uint8_t(d(rng));
    else r.data<int8_t>()[i] = int8_t(d(rng));
  }
  return r;
}

Tensor scalar_of(DType t, double v) {
  Tensor r(t, {});
  if (t == DType::kFloat32) r.data<float>()[0] = float(v);
  else if (t == DType::kUInt8) r.data<uint8_t>()[0] = uint8_t(v);
  else if (t == DType::kInt8) r.data<int8_t>()[0] = int8_t(v);
  return r;
}

// ---------------------------------------------------------------- MatMul / Gemm
Tensor ref_matmul(const Tensor& A, const Tensor& B) {
  Shape a = A.shape(), b = B.shape();
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape cb = *broadcast_shapes({ab, bb});
  auto as = broadcast_strides(ab, cb), bs = broadcast_strides(bb, cb), cs = strides_of(cb);
  Shape out = cb;
  if (A.rank() != 1) out.push_back(M);
  if (B.rank() != 1) out.push_back(N);
  Tensor C(DType::kFloat32, out);
  for (int64_t bi = 0; bi < shape_numel(cb); ++bi) {
    int64_t ao = 0, bo = 0, r = bi;
    for (size_t d = 0; d < cb.size(); ++d) ao += (r / cs[d]) * as[d], bo += (r / cs[d]) * bs[d], r %= cs[d];
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += double(A.data<float>()[ao * M * K + m * K + k]) * B.data<float>()[bo * K * N + k * N + n];
        C.data<float>()[bi * M * N + m * N + n] = float(s);
      }
  }
  return C;
}

TEST(DnnlMatMul, MatchesReferenceWithBroadcasting) {
  std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},       {{2, 3, 4}, {4, 5}},       {{2, 1, 3, 4}, {1, 5, 4, 6}}, {{4}, {2, 4, 3}},
      {{2, 3, 4}, {4}},       {{4}, {4}},                {{3, 2, 7}, {3, 7, 1}},       {{1, 3, 4}, {2, 4, 5}},
      {{5, 2, 3}, {3, 2}}};
  uint32_t seed = 1;
  for (auto& [a, b] : cases) {
    Tensor A = random_tensor(a, seed++), B = random_tensor(b, seed++);
    auto out = run_single_node("MatMul", {A, B}, 1);
    ASSERT_EQ(out.size(), 1u);
    expect_close(out[0], ref_matmul(A, B));
  }
}

TEST(DnnlMatMul, Float16AndEmptyBatch) {
  Tensor A = random_tensor({2, 3, 4}, 7), B = random_tensor({4, 5}, 8);
  Tensor Ah(DType::kFloat16, A.shape()), Bh(DType::kFloat16, B.shape());
  for (int64_t i = 0; i < A.numel(); ++i) Ah.data<float16>()[i] = float16(A.data<float>()[i]);
  for (int64_t i = 0; i < B.numel(); ++i) Bh.data<float16>()[i] = float16(B.data<float>()[i]);
  auto out = run_single_node("MatMul", {Ah, Bh}, 1);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DType::kFloat16);
  Tensor want = ref_matmul(A, B);
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(float(out[0].data<float16>()[i]), want.data<float>()[i], 1e-2);
  auto empty = run_single_node("MatMul", {random_tensor({0, 3, 4}, 9), B}, 1);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].shape(), (Shape{0, 3, 5}));
  auto k0 = run_single_node("MatMul", {random_tensor({2, 0}, 9), random_tensor({0, 3}, 10)}, 1);
  ASSERT_EQ(k0.size(), 1u);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(k0[0].data<float>()[i], 0.f);
}

TEST(DnnlMatMul, RejectsMismatchedK) {
  expect_error(run_status("MatMul", {random_tensor({2, 3}, 1), random_tensor({4, 5}, 2)}, 1), "has K=3 but B");
  expect_error(run_status("MatMul", {random_tensor({2, 2, 3}, 1), random_tensor({3, 3, 5}, 2)}, 1), "do not broadcast");
}

TEST(DnnlGemm, TransposesAlphaBetaAndBroadcastC) {
  int64_t M = 5, K = 7, N = 3;
  std::vector<Shape> cshapes = {{}, {N}, {M, 1}, {1}, {M, N}, {1, N}};
  uint32_t seed = 10;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (size_t ci = 0; ci <= cshapes.size(); ++ci) {
        float alpha = 0.5f + float(ci) * 0.25f, beta = ci % 2 ? 2.f : 0.75f;
        Tensor A = random_tensor(ta ? Shape{K, M} : Shape{M, K}, seed++);
        Tensor B = random_tensor(tb ? Shape{N, K} : Shape{K, N}, seed++);
        std::vector<Tensor> ins = {A, B};
        Tensor C;
        if (ci < cshapes.size()) ins.push_back(C = random_tensor(cshapes[ci], seed++));
        auto out = run_single_node("Gemm", ins, 1,
                                   attrs({{"transA", int_attr(ta)}, {"transB", int_attr(tb)},
                                          {"alpha", float_attr(alpha)}, {"beta", float_attr(beta)}}));
        ASSERT_EQ(out.size(), 1u);
        Tensor want(DType::kFloat32, {M, N});
        auto cs = C.defined() ? broadcast_strides(C.shape(), {M, N}) : std::vector<int64_t>{};
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += double(A.data<float>()[ta ? k * M + m : m * K + k]) * B.data<float>()[tb ? n * K + k : k * N + n];
            s *= alpha;
            if (C.defined()) s += beta * C.data<float>()[m * cs[0] + n * cs[1]];
            want.data<float>()[m * N + n] = float(s);
          }
        expect_close(out[0], want);
      }
}

TEST(DnnlGemm, RejectsBadShapes) {
  expect_error(run_status("Gemm", {random_tensor({2, 3}, 1), random_tensor({4, 5}, 2)}, 1), "has K=3");
  expect_error(run_status("Gemm", {random_tensor({2, 3}, 1), random_tensor({3, 5}, 2), random_tensor({3}, 3)}, 1),
               "input 2 (C) of shape 3 does not broadcast");
  expect_error(run_status("Gemm", {random_tensor({2, 3, 1}, 1), random_tensor({3, 5}, 2)}, 1), "must be 2-D");
}

// ---------------------------------------------------------------- Conv / ConvTranspose
struct ConvParams {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;
  std::string auto_pad;
  bool bias = true;
};

// Naive N-D conv with explicit begin/end pads.
Tensor ref_conv(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group, std::vector<int64_t> st,
                std::vector<int64_t> dl, std::vector<int64_t> pb, const Shape& out_spatial) {
  size_t nd = X.shape().size() - 2;
  int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0), Cg = C / group, Mg = M / group;
  Shape in(X.shape().begin() + 2, X.shape().end()), k(W.shape().begin() + 2, W.shape().end());
  Shape ys = {N, M};
  ys.insert(ys.end(), out_spatial.begin(), out_spatial.end());
  Tensor Y(DType::kFloat32, ys);
  auto is = strides_of(in), ks = strides_of(k), os = strides_of(out_spatial);
  int64_t P = shape_numel(out_spatial), KN = shape_numel(k), IP = shape_numel(in);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < P; ++p) {
        double s = B ? B->data<float>()[m] : 0.0;
        int64_t g = m / Mg;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t kk = 0; kk < KN; ++kk) {
            int64_t lin = 0;
            bool ok = true;
            for (size_t d = 0; d < nd; ++d) {
              int64_t o = (p / os[d]) % out_spatial[d], kd = (kk / ks[d]) % k[d];
              int64_t ci = o * st[d] - pb[d] + kd * dl[d];
              if (ci < 0 || ci >= in[d]) ok = false;
              lin += ci * is[d];
            }
            if (!ok) continue;
            s += double(X.data<float>()[(n * C + g * Cg + c) * IP + lin]) * W.data<float>()[(m * Cg + c) * KN + kk];
          }
        Y.data<float>()[(n * M + m) * P + p] = float(s);
      }
  return Y;
}

TEST(DnnlConv, MatchesReference) {
  std::vector<ConvParams> cases = {
      {{1, 3, 10}, {4, 3, 3}, 1, {2}, {1}, {1, 0}, "", true},
      {{2, 4, 7, 8}, {6, 2, 3, 3}, 2, {1, 2}, {1, 1}, {1, 1, 0, 2}, "", true},
      {{1, 3, 9, 9}, {5, 3, 3, 2}, 1, {2, 1}, {2, 3}, {2, 1, 1, 2}, "", false},
      {{1, 8, 6, 6}, {8, 1, 3, 3}, 8, {1, 1}, {1, 1}, {1, 1, 1, 1}, "", true},  // depthwise
      {{1, 2, 7, 6}, {3, 2, 3, 3}, 1, {2, 2}, {1, 1}, {}, "SAME_UPPER", true},
      {{1, 2, 7, 6}, {3, 2, 2, 2}, 1, {2, 2}, {1, 1}, {}, "SAME_LOWER", true},
      {{1, 2, 7, 6}, {3, 2, 3, 3}, 1, {2, 1}, {1, 1}, {}, "VALID", false},
      {{1, 2, 5, 6, 4}, {4, 2, 3, 2, 2}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0}, "", true},
  };
  uint32_t seed = 100;
  for (auto& c : cases) {
    Tensor X = random_tensor(c.x, seed++), W = random_tensor(c.w, seed++), B = random_tensor({c.w[0]}, seed++);
    Attributes a = attrs({{"group", int_attr(c.group)}, {"strides", ints_attr(c.strides)},
                          {"dilations", ints_attr(c.dilations)}});
    if (!c.pads.empty()) a.set("pads", ints_attr(c.pads));
    if (!c.auto_pad.empty()) a.set("auto_pad", string_attr(c.auto_pad));
    std::vector<Tensor> ins = {X, W};
    if (c.bias) ins.push_back(B);
    auto out = run_single_node("Conv", ins, 1, a);
    ASSERT_EQ(out.size(), 1u);
    size_t nd = c.x.size() - 2;
    std::vector<int64_t> pb(nd, 0);
    Shape os(nd);
    for (size_t d = 0; d < nd; ++d) {
      int64_t ek = (c.w[d + 2] - 1) * c.dilations[d] + 1;
      if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
        os[d] = (c.x[d + 2] + c.strides[d] - 1) / c.strides[d];
        int64_t total = std::max<int64_t>(0, (os[d] - 1) * c.strides[d] + ek - c.x[d + 2]);
        pb[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        int64_t b = c.pads.empty() ? 0 : c.pads[d], e = c.pads.empty() ? 0 : c.pads[d + nd];
        pb[d] = b;
        os[d] = (c.x[d + 2] + b + e - ek) / c.strides[d] + 1;
      }
    }
    expect_close(out[0], ref_conv(X, W, c.bias ? &B : nullptr, c.group, c.strides, c.dilations, pb, os));
  }
}

TEST(DnnlConv, RejectsBadInputs) {
  expect_error(run_status("Conv", {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 3, 3, 3}, 2)}, 1),
               "input 1 (W) has 3 input channels, X has 4 (group=1)");
  expect_error(run_status("Conv", {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 4, 3}, 2)}, 1), "has rank 3");
  expect_error(run_status("Conv", {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 4, 3, 3}, 2), random_tensor({3}, 3)}, 1),
               "input 2 (B) has shape 3, expected [2]");
  expect_error(run_status("Conv", {random_tensor({1, 4, 2, 2}, 1), random_tensor({2, 4, 3, 3}, 2)}, 1),
               "smaller than the dilated kernel");
  expect_error(run_status("Conv", {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 4, 3, 3}, 2)}, 1,
                          attrs({{"auto_pad", string_attr("BOGUS")}})),
               "auto_pad 'BOGUS'");
  expect_error(run_status("Conv", {random_tensor({1, 4, 5, 5}, 1), random_tensor({2, 4, 3, 3}, 2)}, 1,
                          attrs({{"strides", ints_attr({1, 1, 1})}})),
               "strides [1, 1, 1] has 3 entries, expected 2");
}

// Naive transposed conv: scatter into the full extent, then crop by pads (zero outside).
Tensor ref_convtranspose(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group, std::vector<int64_t> st,
                         std::vector<int64_t> dl, std::vector<int64_t> pb, const Shape& out_spatial) {
  size_t nd = X.shape().size() - 2;
  int64_t N = X.dim(0), C = X.dim(1), Cg = C / group, Mg = W.dim(1), M = Mg * group;
  Shape in(X.shape().begin() + 2, X.shape().end()), k(W.shape().begin() + 2, W.shape().end());
  Shape ys = {N, M};
  ys.insert(ys.end(), out_spatial.begin(), out_spatial.end());
  Tensor Y(DType::kFloat32, ys);
  auto is = strides_of(in), ks = strides_of(k), os = strides_of(out_spatial);
  int64_t IP = shape_numel(in), KN = shape_numel(k), P = shape_numel(out_spatial);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ip = 0; ip < IP; ++ip)
        for (int64_t mg = 0; mg < Mg; ++mg)
          for (int64_t kk = 0; kk < KN; ++kk) {
            int64_t lin = 0;
            bool ok = true;
            for (size_t d = 0; d < nd; ++d) {
              int64_t i = (ip / is[d]) % in[d], kd = (kk / ks[d]) % k[d];
              int64_t o = i * st[d] + kd * dl[d] - pb[d];
              if (o < 0 || o >= out_spatial[d]) ok = false;
              lin += o * os[d];
            }
            if (!ok) continue;
            int64_t m = (c / Cg) * Mg + mg;
            Y.data<float>()[(n * M + m) * P + lin] +=
                X.data<float>()[(n * C + c) * IP + ip] * W.data<float>()[(c * Mg + mg) * KN + kk];
          }
  if (B)
    for (int64_t i = 0; i < Y.numel(); ++i) Y.data<float>()[i] += B->data<float>()[(i / P) % M];
  return Y;
}

TEST(DnnlConvTranspose, MatchesReference) {
  struct Case {
    Shape x, w;
    int64_t group;
    std::vector<int64_t> strides, dilations, pads, output_padding, output_shape;
  };
  std::vector<Case> cases = {
      {{1, 3, 5}, {3, 2, 3}, 1, {2}, {1}, {0, 0}, {}, {}},
      {{2, 4, 4, 5}, {4, 3, 3, 3}, 2, {2, 1}, {1, 2}, {1, 0, 1, 1}, {1, 0}, {}},
      {{1, 2, 3, 3}, {2, 2, 3, 3}, 1, {3, 2}, {1, 1}, {1, 1, 1, 1}, {}, {}},
      {{1, 2, 3, 4}, {2, 3, 2, 2}, 1, {2, 2}, {1, 1}, {}, {}, {10, 9}},  // output_shape: zero-extended
      {{1, 1, 3, 3, 2}, {1, 2, 2, 2, 2}, 1, {1, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {0, 1, 0}, {}},
  };
  uint32_t seed = 200;
  for (auto& c : cases) {
    Tensor X = random_tensor(c.x, seed++), W = random_tensor(c.w, seed++);
    int64_t M = c.w[1] * c.group;
    Tensor B = random_tensor({M}, seed++);
    Attributes a = attrs({{"group", int_attr(c.group)}, {"strides", ints_attr(c.strides)},
                          {"dilations", ints_attr(c.dilations)}});
    if (!c.pads.empty()) a.set("pads", ints_attr(c.pads));
    if (!c.output_padding.empty()) a.set("output_padding", ints_attr(c.output_padding));
    if (!c.output_shape.empty()) a.set("output_shape", ints_attr(c.output_shape));
    auto out = run_single_node("ConvTranspose", {X, W, B}, 1, a);
    ASSERT_EQ(out.size(), 1u);
    size_t nd = c.x.size() - 2;
    std::vector<int64_t> pb(nd, 0);
    Shape os(nd);
    for (size_t d = 0; d < nd; ++d) {
      int64_t ek = (c.w[d + 2] - 1) * c.dilations[d] + 1;
      int64_t op = c.output_padding.empty() ? 0 : c.output_padding[d];
      int64_t natural = c.strides[d] * (c.x[d + 2] - 1) + ek + op;
      if (!c.output_shape.empty()) {
        os[d] = c.output_shape[d];
        int64_t total = natural - os[d];
        pb[d] = total >= 0 ? total - total / 2 : -((-total) / 2);
      } else {
        pb[d] = c.pads.empty() ? 0 : c.pads[d];
        os[d] = natural - pb[d] - (c.pads.empty() ? 0 : c.pads[d + nd]);
      }
    }
    expect_close(out[0], ref_convtranspose(X, W, &B, c.group, c.strides, c.dilations, pb, os));
  }
}

TEST(DnnlConvTranspose, RejectsBadInputs) {
  expect_error(run_status("ConvTranspose", {random_tensor({1, 4, 5, 5}, 1), random_tensor({3, 2, 3, 3}, 2)}, 1),
               "input 1 (W) has 3 input channels, X has 4");
  expect_error(run_status("ConvTranspose", {random_tensor({1, 4, 5, 5}, 1), random_tensor({4, 2, 3, 3}, 2),
                                            random_tensor({4}, 3)}, 1),
               "input 2 (B) has shape 4, expected [2]");
}

// ---------------------------------------------------------------- pooling
TEST(DnnlPool, MaxPoolWithIndicesAndAveragePool) {
  Tensor X = random_tensor({2, 3, 6, 7}, 300);
  auto out = run_single_node("MaxPool", {X}, 2,
                             attrs({{"kernel_shape", ints_attr({3, 2})}, {"strides", ints_attr({2, 2})},
                                    {"pads", ints_attr({1, 0, 1, 1})}, {"dilations", ints_attr({1, 2})},
                                    {"ceil_mode", int_attr(1)}, {"storage_order", int_attr(1)}}),
                             12);
  ASSERT_EQ(out.size(), 2u);
  // out H = ceil((6+2-3)/2)+1 = 4; W: ek=3, ceil((7+1-3)/2)+1 = 4, last window start 6 < 7: keep.
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4, 4}));
  for (int64_t pl = 0; pl < 6; ++pl)
    for (int64_t oh = 0; oh < 4; ++oh)
      for (int64_t ow = 0; ow < 4; ++ow) {
        float best = -INFINITY;
        int64_t at = -1;
        for (int64_t kh = 0; kh < 3; ++kh)
          for (int64_t kw = 0; kw < 2; ++kw) {
            int64_t h = oh * 2 - 1 + kh, w = ow * 2 + kw * 2;
            if (h < 0 || h >= 6 || w < 0 || w >= 7) continue;
            float v = X.data<float>()[pl * 42 + h * 7 + w];
            if (v > best) best = v, at = pl * 42 + w * 6 + h;
          }
        int64_t o = pl * 16 + oh * 4 + ow;
        EXPECT_EQ(out[0].data<float>()[o], best);
        EXPECT_EQ(out[1].data<int64_t>()[o], at);
      }
  for (int cip = 0; cip < 2; ++cip) {
    auto avg = run_single_node("AveragePool", {X}, 1,
                               attrs({{"kernel_shape", ints_attr({3, 3})}, {"pads", ints_attr({1, 1, 1, 1})},
                                      {"count_include_pad", int_attr(cip)}}));
    ASSERT_EQ(avg.size(), 1u);
    Tensor want(DType::kFloat32, {2, 3, 6, 7});
    for (int64_t pl = 0; pl < 6; ++pl)
      for (int64_t h = 0; h < 6; ++h)
        for (int64_t w = 0; w < 7; ++w) {
          double s = 0;
          int n = 0;
          for (int64_t dh = -1; dh <= 1; ++dh)
            for (int64_t dw = -1; dw <= 1; ++dw)
              if (h + dh >= 0 && h + dh < 6 && w + dw >= 0 && w + dw < 7) s += X.data<float>()[pl * 42 + (h + dh) * 7 + w + dw], ++n;
          want.data<float>()[pl * 42 + h * 7 + w] = float(s / (cip ? 9 : n));
        }
    expect_close(avg[0], want);
  }
  auto g = run_single_node("GlobalAveragePool", {X}, 1);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].shape(), (Shape{2, 3, 1, 1}));
}

TEST(DnnlPool, RejectsBadInputs) {
  expect_error(run_status("MaxPool", {random_tensor({1, 2, 4, 4}, 1)}, 1), "kernel_shape is required");
  expect_error(run_status("MaxPool", {random_tensor({1, 2, 4, 4}, 1)}, 1, attrs({{"kernel_shape", ints_attr({3})}})),
               "kernel_shape [3] has 1 entries, X has 2 spatial dims");
  expect_error(run_status("AveragePool", {random_tensor({4, 4}, 1)}, 1, attrs({{"kernel_shape", ints_attr({3})}})),
               "needs rank >= 3");
}

// ---------------------------------------------------------------- quantization
TEST(DnnlQuant, QuantizeDequantizePerAxis) {
  Tensor X = random_tensor({2, 3, 4}, 400, -3, 3);
  Tensor S(DType::kFloat32, {3}), Z(DType::kInt8, {3});
  for (int i = 0; i < 3; ++i) S.data<float>()[i] = 0.02f * float(i + 1), Z.data<int8_t>()[i] = int8_t(i * 5 - 5);
  auto q = run_single_node("QuantizeLinear", {X, S, Z}, 1, attrs({{"axis", int_attr(1)}}), 13);
  ASSERT_EQ(q.size(), 1u);
  ASSERT_EQ(q[0].dtype(), DType::kInt8);
  for (int64_t i = 0; i < X.numel(); ++i) {
    int64_t c = (i / 4) % 3;
    float v = std::nearbyint(X.data<float>()[i] / S.data<float>()[c]) + float(Z.data<int8_t>()[c]);
    EXPECT_EQ(q[0].data<int8_t>()[i], int8_t(std::min(127.f, std::max(-128.f, v))));
  }
  auto d = run_single_node("DequantizeLinear", {q[0], S, Z}, 1, attrs({{"axis", int_attr(1)}}), 13);
  ASSERT_EQ(d.size(), 1u);
  for (int64_t i = 0; i < X.numel(); ++i) {
    int64_t c = (i / 4) % 3;
    EXPECT_FLOAT_EQ(d[0].data<float>()[i], float(q[0].data<int8_t>()[i] - Z.data<int8_t>()[c]) * S.data<float>()[c]);
  }
  Tensor Sbad(DType::kFloat32, {4});
  expect_error(run_status("QuantizeLinear", {X, Sbad}, 1, attrs({{"axis", int_attr(1)}}), 13), "needs [3]");
}

TEST(DnnlQuant, MatMulIntegerAndConvInteger) {
  Tensor A = int_tensor(DType::kUInt8, {2, 3, 5}, 500, 0, 255), B = int_tensor(DType::kInt8, {5, 4}, 501, -128, 127);
  Tensor za = scalar_of(DType::kUInt8, 12);
  Tensor zb(DType::kInt8, {4});
  for (int i = 0; i < 4; ++i) zb.data<int8_t>()[i] = int8_t(i - 2);
  auto out = run_single_node("MatMulInteger", {A, B, za, zb}, 1);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t n = 0; n < 4; ++n) {
      int32_t s = 0;
      for (int64_t k = 0; k < 5; ++k) s += (A.data<uint8_t>()[r * 5 + k] - 12) * (B.data<int8_t>()[k * 4 + n] - (n - 2));
      EXPECT_EQ(out[0].data<int32_t>()[r * 4 + n], s);
    }
  // ConvInteger == float conv of the zero-point-shifted values (exact at these sizes).
  Tensor X = int_tensor(DType::kUInt8, {1, 4, 6, 5}, 502, 0, 255), W = int_tensor(DType::kUInt8, {4, 2, 3, 2}, 503, 0, 255);
  Tensor zx = scalar_of(DType::kUInt8, 100), zw = scalar_of(DType::kUInt8, 7);
  auto ci = run_single_node("ConvInteger", {X, W, zx, zw}, 1,
                            attrs({{"group", int_attr(2)}, {"pads", ints_attr({1, 0, 1, 1})}, {"strides", ints_attr({2, 1})}}),
                            10);
  ASSERT_EQ(ci.size(), 1u);
  Tensor Xf(DType::kFloat32, X.shape()), Wf(DType::kFloat32, W.shape());
  for (int64_t i = 0; i < X.numel(); ++i) Xf.data<float>()[i] = float(X.data<uint8_t>()[i] - 100);
  for (int64_t i = 0; i < W.numel(); ++i) Wf.data<float>()[i] = float(W.data<uint8_t>()[i] - 7);
  Tensor want = ref_conv(Xf, Wf, nullptr, 2, {2, 1}, {1, 1}, {1, 0}, {3, 5});
  ASSERT_EQ(ci[0].shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(ci[0].data<int32_t>()[i], int32_t(want.data<float>()[i]));
  expect_error(run_status("MatMulInteger", {A, random_tensor({5, 4}, 1)}, 1), "input 1 has dtype float32");
}


// ---------------------------------------------------------------- oneDNN pooling vs naive loops
namespace pool_ref {

struct Case {
  Shape x;
  std::vector<int64_t> k, st, pads;  // pads: begins then ends (empty: none)
  bool ceil = false;
  std::string auto_pad = "NOTSET";
};

// The output tensor (uninitialized) of a pooling case, sized by the ONNX rules.
Tensor out_tensor(const Case& c) {
  size_t nd = c.x.size() - 2;
  std::vector<int64_t> pb(nd, 0), pe(nd, 0), out(nd), st = c.st.empty() ? std::vector<int64_t>(nd, 1) : c.st;
  for (size_t d = 0; d < nd; ++d) {
    int64_t in = c.x[d + 2];
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[d] = (in + st[d] - 1) / st[d];
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * st[d] + c.k[d] - in);
      pb[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
      continue;
    }
    if (!c.pads.empty()) pb[d] = c.pads[d], pe[d] = c.pads[d + nd];
    int64_t span = in + pb[d] + pe[d] - c.k[d];
    if (c.ceil) {
      out[d] = (span + st[d] - 1) / st[d] + 1;
      if ((out[d] - 1) * st[d] >= in + pb[d]) out[d]--;
    } else {
      out[d] = span / st[d] + 1;
    }
  }
  Shape ys{c.x[0], c.x[1]};
  ys.insert(ys.end(), out.begin(), out.end());
  Tensor Y(DType::kFloat32, ys);
  return Y;
}

// Naive N-d MaxPool / AveragePool following the ONNX rules (no dilation).
void fill(const Case& c, const Tensor& X, Tensor& Y, bool max, bool cip) {
  size_t nd = c.x.size() - 2;
  std::vector<int64_t> pb(nd, 0), pe(nd, 0), st = c.st.empty() ? std::vector<int64_t>(nd, 1) : c.st;
  Shape in(c.x.begin() + 2, c.x.end()), out(Y.shape().begin() + 2, Y.shape().end());
  for (size_t d = 0; d < nd; ++d) {
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * st[d] + c.k[d] - in[d]);
      pb[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[d] = total - pb[d];
    } else if (!c.pads.empty()) {
      pb[d] = c.pads[d], pe[d] = c.pads[d + nd];
    }
  }
  int64_t planes = c.x[0] * c.x[1], ip = shape_numel(in), op = shape_numel(out), kn = shape_numel(c.k);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < op; ++o) {
      std::vector<int64_t> oc(nd);
      for (int64_t r = o, d = int64_t(nd) - 1; d >= 0; --d) oc[size_t(d)] = r % out[size_t(d)], r /= out[size_t(d)];
      double s = 0, best = -INFINITY;
      int64_t n = 0, npad = 0;
      for (int64_t e = 0; e < kn; ++e) {
        int64_t lin = 0;
        bool inside = true, padded = true;
        for (int64_t r = e, d = int64_t(nd) - 1; d >= 0; --d) {
          size_t u = size_t(d);
          int64_t pos = oc[u] * st[u] - pb[u] + r % c.k[u];
          r /= c.k[u];
          if (pos < 0 || pos >= in[u]) inside = false;
          if (pos < -pb[u] || pos >= in[u] + pe[u]) padded = false;
          int64_t stride = 1;
          for (size_t q = u + 1; q < nd; ++q) stride *= in[q];
          lin += pos * stride;
        }
        npad += padded;
        if (!inside) continue;
        float v = X.data<float>()[pl * ip + lin];
        s += v, ++n, best = std::max(best, double(v));
      }
      Y.data<float>()[pl * op + o] = float(max ? best : s / double(cip ? npad : n));
    }
}

Attributes case_attrs(const Case& c, bool cip) {
  Attributes a;
  a.set("kernel_shape", ints_attr(c.k));
  if (!c.st.empty()) a.set("strides", ints_attr(c.st));
  if (!c.pads.empty()) a.set("pads", ints_attr(c.pads));
  if (c.ceil) a.set("ceil_mode", int_attr(1));
  if (c.auto_pad != "NOTSET") a.set("auto_pad", string_attr(c.auto_pad));
  if (cip) a.set("count_include_pad", int_attr(1));
  return a;
}

std::vector<Case> cases() {
  return {
      {{2, 3, 8, 8}, {3, 3}, {2, 2}, {1, 1, 1, 1}},            // ResNet stem shape, scaled down
      {{1, 4, 9, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, true},      // ceil_mode with an overflowing last window
      {{2, 2, 7, 7}, {2, 2}, {2, 2}, {}, true},                 // ceil_mode, no pads
      {{1, 3, 11, 6}, {3, 2}, {2, 1}, {0, 1, 2, 0}},            // asymmetric pads, strides
      {{1, 3, 11, 6}, {3, 2}, {3, 2}, {2, 1, 1, 1}, true},      // asymmetric pads + ceil_mode
      {{1, 2, 6, 7}, {4, 4}, {}, {}},                           // default strides
      {{1, 2, 7, 5}, {3, 3}, {2, 2}, {}, false, "SAME_UPPER"},
      {{1, 2, 7, 5}, {2, 2}, {2, 2}, {}, false, "SAME_LOWER"},
      {{2, 3, 13}, {3}, {2}, {1, 1}, true},                     // 1-D
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, true},  // 3-D
      {{1, 1, 4, 4}, {3, 3}, {1, 1}, {2, 2, 2, 2}},             // pads = kernel - 1
  };
}

}  // namespace pool_ref

TEST(DnnlPool, OneDnnPathMatchesNaiveLoops) {
  uint32_t seed = 900;
  for (const auto& c : pool_ref::cases()) {
    Tensor X = random_tensor(c.x, seed++);
    SCOPED_TRACE(shape_str(c.x) + " k=" + shape_str(c.k) + " ceil=" + std::to_string(c.ceil) + " " + c.auto_pad);
    // MaxPool, one output (oneDNN where eligible) and with Indices (always the loop).
    Tensor want = pool_ref::out_tensor(c);
    pool_ref::fill(c, X, want, true, false);
    auto got = run_single_node("MaxPool", {X}, 1, pool_ref::case_attrs(c, false), 12);
    ASSERT_EQ(got.size(), 1u);
    expect_close(got[0], want, 0);
    auto with_idx = run_single_node("MaxPool", {X}, 2, pool_ref::case_attrs(c, false), 12);
    ASSERT_EQ(with_idx.size(), 2u);
    expect_close(with_idx[0], got[0], 0);
    for (int cip = 0; cip < 2; ++cip) {
      SCOPED_TRACE("count_include_pad=" + std::to_string(cip));
      Tensor wa = pool_ref::out_tensor(c);
      pool_ref::fill(c, X, wa, false, cip);
      auto ga = run_single_node("AveragePool", {X}, 1, pool_ref::case_attrs(c, cip), 19);
      ASSERT_EQ(ga.size(), 1u);
      expect_close(ga[0], wa, 1e-5);
    }
  }
}

TEST(DnnlPool, OneDnnPathRepeatedShapesAndLargerPlanes) {
  // Cached primitives: same kernel instance, two input shapes, run twice each.
  pool_ref::Case c{{2, 16, 30, 30}, {3, 3}, {2, 2}, {1, 1, 1, 1}};
  EngineOptions o;
  auto e = Engine::from_model(single_node_model("MaxPool", {random_tensor(c.x, 1)}, 1, pool_ref::case_attrs(c, false), 12), o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto ctx = (*e)->create_context();
  for (int it = 0; it < 4; ++it) {
    pool_ref::Case ci = c;
    ci.x = it % 2 ? Shape{1, 16, 17, 23} : c.x;
    Tensor X = random_tensor(ci.x, 50 + it);
    Tensor want = pool_ref::out_tensor(ci);
    pool_ref::fill(ci, X, want, true, false);
    auto out = ctx->run({{"in0", X}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    expect_close((*out)[0].tensor, want, 0);
  }
}

}  // namespace
}  // namespace ingot::testing
