// Tensor-manipulation kernels (tensor_*.cc) against plain references, plus bad-input errors.
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <tuple>

#include "op_test_util.h"

namespace ingot::testing {
namespace {

Tensor i64(std::vector<int64_t> v) {
  int64_t n = int64_t(v.size());
  return make<int64_t>({n}, std::move(v));
}
Tensor i64s(int64_t v) { return make<int64_t>({}, {v}); }

template <class T>
Tensor iota_tensor(Shape shape, T start = T(0)) {
  Tensor t(dtype_of<T>(), std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T(start + T(i));
  return t;
}

Attributes attrs(std::initializer_list<std::pair<const char*, Attribute>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Multi-index helpers for references.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int k = int(s.size()) - 1; k >= 0; --k) {
    idx[size_t(k)] = i % s[size_t(k)];
    i /= s[size_t(k)];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t o = 0;
  for (size_t k = 0; k < s.size(); ++k) o = o * s[k] + idx[k];
  return o;
}

// ------------------------------------------------------------------ Transpose
template <class T>
void check_transpose(Shape shape, std::vector<int64_t> perm, uint32_t seed) {
  Tensor x(dtype_of<T>(), shape);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<T>()[i] = T(rng() % 100);
  auto out = run_single_node("Transpose", {x}, 1, attrs({{"perm", ints_attr(perm)}}));
  ASSERT_EQ(out.size(), 1u);
  Shape os;
  for (auto p : perm) os.push_back(shape[size_t(p)]);
  ASSERT_EQ(out[0].shape(), os);
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    auto oi = unravel(i, os);
    std::vector<int64_t> ii(shape.size());
    for (size_t k = 0; k < perm.size(); ++k) ii[size_t(perm[k])] = oi[k];
    ASSERT_EQ(out[0].data<T>()[i], x.data<T>()[ravel(ii, shape)]) << "at " << i;
  }
}

TEST(TensorOps, TransposeRandom) {
  check_transpose<float>({3, 4, 5}, {2, 0, 1}, 1);
  check_transpose<float>({3, 4, 5}, {0, 2, 1}, 2);
  check_transpose<int8_t>({2, 3, 4, 5}, {3, 1, 0, 2}, 3);
  check_transpose<int64_t>({7, 1, 9}, {2, 1, 0}, 4);
  check_transpose<uint16_t>({2, 3, 4}, {1, 0, 2}, 5);   // contiguous inner path
  check_transpose<float>({130, 67}, {1, 0}, 6);          // blocked path with ragged tiles
  check_transpose<float>({4, 300, 200}, {0, 2, 1}, 7);   // large: parallel
  check_transpose<double>({2, 3, 1, 5, 4}, {4, 2, 0, 3, 1}, 8);
}

TEST(TensorOps, TransposeDefaultReversesAndBadPerm) {
  Tensor x = iota_tensor<float>({2, 3});
  auto out = run_single_node("Transpose", {x}, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_NE(run_error("Transpose", {x}, 1, attrs({{"perm", ints_attr({0, 0})}})).find("not a permutation"),
            std::string::npos);
}

// ------------------------------------------------------------------ Reshape & friends
TEST(TensorOps, ReshapeZeroAndMinusOne) {
  Tensor x = iota_tensor<float>({2, 3, 4});
  auto out = run_single_node("Reshape", {x, i64({0, -1})}, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(values<float>(out[0]), values<float>(x));
}

TEST(TensorOps, ReshapeBadShapeMessage) {
  Tensor x = iota_tensor<float>({2, 3});
  std::string err = run_error("Reshape", {x, i64({4, 2})}, 1);
  EXPECT_NE(err.find("cannot reshape 2x3 (6 elements) to 4x2"), std::string::npos) << err;
  err = run_error("Reshape", {x, i64({-1, -1})}, 1);
  EXPECT_NE(err.find("more than one dimension is -1"), std::string::npos) << err;
  err = run_error("Reshape", {x, i64({0, 0, 2})}, 1);
  EXPECT_NE(err.find("cannot reshape"), std::string::npos) << err;
}

TEST(TensorOps, SqueezeUnsqueezeFlatten) {
  Tensor x = iota_tensor<int32_t>({1, 3, 1, 2});
  auto sq = run_single_node("Squeeze", {x}, 1);
  ASSERT_EQ(sq.size(), 1u);
  EXPECT_EQ(sq[0].shape(), (Shape{3, 2}));
  auto sq2 = run_single_node("Squeeze", {x, i64({-2})}, 1);
  ASSERT_EQ(sq2.size(), 1u);
  EXPECT_EQ(sq2[0].shape(), (Shape{1, 3, 2}));
  EXPECT_NE(run_error("Squeeze", {x, i64({1})}, 1).find("not 1"), std::string::npos);
  auto uq = run_single_node("Unsqueeze", {x, i64({0, -1})}, 1);
  ASSERT_EQ(uq.size(), 1u);
  EXPECT_EQ(uq[0].shape(), (Shape{1, 1, 3, 1, 2, 1}));
  auto uq11 = run_single_node("Unsqueeze", {x}, 1, attrs({{"axes", ints_attr({1})}}), 11);
  ASSERT_EQ(uq11.size(), 1u);
  EXPECT_EQ(uq11[0].shape(), (Shape{1, 1, 3, 1, 2}));
  auto fl = run_single_node("Flatten", {x}, 1, attrs({{"axis", int_attr(2)}}));
  ASSERT_EQ(fl.size(), 1u);
  EXPECT_EQ(fl[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values<int32_t>(fl[0]), values<int32_t>(x));
}

TEST(TensorOps, ShapeSizeWithStartEnd) {
  Tensor x(DType::kFloat32, {2, 3, 4, 5});
  auto s = run_single_node("Shape", {x}, 1, attrs({{"start", int_attr(1)}, {"end", int_attr(-1)}}), 15);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(values<int64_t>(s[0]), (std::vector<int64_t>{3, 4}));
  auto n = run_single_node("Size", {x}, 1);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(values<int64_t>(n[0]), (std::vector<int64_t>{120}));
}

// A model where Shape -> Gather -> Concat -> Reshape folds at build time from an initializer.
TEST(TensorOps, ShapeSubgraphFolds) {
  Model m;
  m.ir_version = 8;
  m.opsets[""] = 17;
  Graph& g = m.graph;
  ValueId x = g.intern("x");
  g.value(x).dtype = DType::kFloat32;
  g.value(x).shape = SymShape{Dim{2, {}}, Dim{3, {}}, Dim{4, {}}};
  g.inputs.push_back(x);
  ValueId idx = g.intern("idx"), minus1 = g.intern("m1");
  g.initializers[idx] = i64({0});
  g.initializers[minus1] = i64({-1});
  auto node = [&](const char* op, std::vector<ValueId> in, const char* out, Attributes a = {}) {
    Node n;
    n.op_type = op;
    n.name = out;
    n.inputs = std::move(in);
    n.outputs = {g.intern(out)};
    n.attrs = std::move(a);
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  ValueId s = node("Shape", {x}, "s");
  ValueId d0 = node("Gather", {s, idx}, "d0", attrs({{"axis", int_attr(0)}}));
  ValueId sh = node("Concat", {d0, minus1}, "sh", attrs({{"axis", int_attr(0)}}));
  ValueId y = node("Reshape", {x, sh}, "y");
  g.outputs.push_back(y);
  auto e = Engine::from_model(std::move(m));
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto out = (*e)->create_context()->run({{"x", iota_tensor<float>({2, 3, 4})}});
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_EQ((*out)[0].tensor.shape(), (Shape{2, 12}));
}

// ------------------------------------------------------------------ Concat / Split
TEST(TensorOps, ConcatSplitRoundTrip) {
  Tensor a = random_tensor({2, 3, 4}, 1), b = random_tensor({2, 5, 4}, 2), c = random_tensor({2, 0, 4}, 3);
  auto cat = run_single_node("Concat", {a, c, b}, 1, attrs({{"axis", int_attr(-2)}}));
  ASSERT_EQ(cat.size(), 1u);
  ASSERT_EQ(cat[0].shape(), (Shape{2, 8, 4}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 8; ++k)
      for (int64_t j = 0; j < 4; ++j) {
        float want = k < 3 ? a.data<float>()[(n * 3 + k) * 4 + j] : b.data<float>()[(n * 5 + k - 3) * 4 + j];
        ASSERT_EQ(cat[0].data<float>()[(n * 8 + k) * 4 + j], want);
      }
  auto parts = run_single_node("Split", {cat[0], i64({3, 0, 5})}, 3, attrs({{"axis", int_attr(1)}}));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(max_abs_diff(parts[0], a), 0);
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0, 4}));
  EXPECT_EQ(max_abs_diff(parts[2], b), 0);
  std::string err = run_error("Split", {cat[0], i64({3, 4})}, 2, attrs({{"axis", int_attr(1)}}));
  EXPECT_NE(err.find("sums to 7"), std::string::npos) << err;
  err = run_error("Concat", {a, random_tensor({3, 3, 4}, 4)}, 1, attrs({{"axis", int_attr(1)}}));
  EXPECT_NE(err.find("does not match"), std::string::npos) << err;
}

TEST(TensorOps, SplitNumOutputsOpset18) {
  Tensor x = iota_tensor<float>({7});
  auto parts = run_single_node("Split", {x}, 3, attrs({{"num_outputs", int_attr(3)}}), 18);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values<float>(parts[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(values<float>(parts[2]), (std::vector<float>{6}));
  auto old = run_single_node("Split", {iota_tensor<float>({6})}, 2, attrs({{"split", ints_attr({2, 4})}}), 11);
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(values<float>(old[1]), (std::vector<float>{2, 3, 4, 5}));
}

// ------------------------------------------------------------------ Slice
TEST(TensorOps, SliceRandomAgainstReference) {
  std::mt19937 rng(42);
  Shape s{5, 6, 7};
  Tensor x = iota_tensor<float>(s);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<int64_t> st, en, ax, sp;
    for (int64_t a = 0; a < 3; ++a) {
      if (rng() % 3 == 0) continue;
      ax.push_back(rng() % 2 ? a : a - 3);
      int64_t step = int64_t(rng() % 3) + 1;
      if (rng() % 2) step = -step;
      sp.push_back(step);
      auto pick = [&]() -> int64_t {
        switch (rng() % 4) {
          case 0: return std::numeric_limits<int64_t>::max();
          case 1: return std::numeric_limits<int64_t>::min();
          default: return int64_t(rng() % 20) - 10;
        }
      };
      st.push_back(pick());
      en.push_back(pick());
    }
    if (ax.empty()) continue;
    auto out = run_single_node("Slice", {x, i64(st), i64(en), i64(ax), i64(sp)}, 1);
    ASSERT_EQ(out.size(), 1u);
    // reference: python-style slicing per axis
    std::vector<std::vector<int64_t>> sel(3);
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t i = 0; i < s[size_t(a)]; ++i) sel[size_t(a)].push_back(i);
    for (size_t k = 0; k < ax.size(); ++k) {
      int64_t a = ax[k] < 0 ? ax[k] + 3 : ax[k], d = s[size_t(a)], step = sp[k];
      int64_t b = st[k], e = en[k];
      if (b < 0) b = std::max<int64_t>(b + d, 0);  // the spec clamps start to [0, d-1] for negative steps
      if (e < 0) e = std::max<int64_t>(e + d, step > 0 ? 0 : -1);
      b = step > 0 ? std::min(b, d) : std::min(b, d - 1);
      e = step > 0 ? std::min(e, d) : std::min(e, d - 1);
      sel[size_t(a)].clear();
      for (int64_t i = b; step > 0 ? i < e : i > e; i += step) sel[size_t(a)].push_back(i);
    }
    Shape os{int64_t(sel[0].size()), int64_t(sel[1].size()), int64_t(sel[2].size())};
    ASSERT_EQ(out[0].shape(), os) << "trial " << trial << " starts " << ::testing::PrintToString(st) << " ends " << ::testing::PrintToString(en) << " axes " << ::testing::PrintToString(ax) << " steps " << ::testing::PrintToString(sp);
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      auto oi = unravel(i, os);
      int64_t src = ravel({sel[0][size_t(oi[0])], sel[1][size_t(oi[1])], sel[2][size_t(oi[2])]}, s);
      ASSERT_EQ(out[0].data<float>()[i], float(src)) << "trial " << trial;
    }
  }
}

TEST(TensorOps, SliceZeroStepIsError) {
  std::string err = run_error("Slice", {iota_tensor<float>({4}), i64({0}), i64({4}), i64({0}), i64({0})}, 1);
  EXPECT_NE(err.find("0 step"), std::string::npos) << err;
}

// ------------------------------------------------------------------ Gather family
TEST(TensorOps, GatherRandomAndOutOfRange) {
  Tensor x = random_tensor({4, 5, 3}, 9);
  Tensor idx = make<int64_t>({2, 2}, {4, -1, 0, 2});
  auto out = run_single_node("Gather", {x, idx}, 1, attrs({{"axis", int_attr(1)}}));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{4, 2, 2, 3}));
  std::vector<int64_t> norm{4, 4, 0, 2};
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t c = 0; c < 3; ++c)
        ASSERT_EQ(out[0].data<float>()[(a * 4 + j) * 3 + c], x.data<float>()[(a * 5 + norm[size_t(j)]) * 3 + c]);
  std::string err = run_error("Gather", {x, make<int64_t>({1}, {7})}, 1, attrs({{"axis", int_attr(0)}}));
  EXPECT_NE(err.find("input 1 (indices) value 7 is out of range for axis 0 of size 4"), std::string::npos) << err;
  err = run_error("Gather", {x, make<int32_t>({1}, {-6})}, 1, attrs({{"axis", int_attr(1)}}));
  EXPECT_NE(err.find("value -6 is out of range for axis 1 of size 5"), std::string::npos) << err;
}

TEST(TensorOps, GatherElementsAndND) {
  Tensor x = iota_tensor<float>({3, 3});
  auto ge = run_single_node("GatherElements", {x, make<int64_t>({2, 3}, {1, 2, 0, 2, 0, -1})}, 1,
                            attrs({{"axis", int_attr(0)}}));
  ASSERT_EQ(ge.size(), 1u);
  EXPECT_EQ(values<float>(ge[0]), (std::vector<float>{3, 7, 2, 6, 1, 8}));
  EXPECT_NE(run_error("GatherElements", {x, make<int64_t>({1, 1}, {3})}, 1).find("out of range"), std::string::npos);

  Tensor d = iota_tensor<int32_t>({2, 2, 2});
  auto nd = run_single_node("GatherND", {d, make<int64_t>({2, 1}, {1, 0})}, 1, attrs({{"batch_dims", int_attr(1)}}));
  ASSERT_EQ(nd.size(), 1u);
  EXPECT_EQ(nd[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(nd[0]), (std::vector<int32_t>{2, 3, 4, 5}));
  auto nd0 = run_single_node("GatherND", {d, make<int64_t>({2, 3}, {0, 1, 1, 1, 0, 0})}, 1);
  ASSERT_EQ(nd0.size(), 1u);
  EXPECT_EQ(values<int32_t>(nd0[0]), (std::vector<int32_t>{3, 4}));
  EXPECT_NE(run_error("GatherND", {d, make<int64_t>({1, 2}, {0, 2})}, 1).find("value 2 is out of range for axis 1"),
            std::string::npos);
}

// ------------------------------------------------------------------ Scatter family
TEST(TensorOps, ScatterNDReductions) {
  Tensor data = make<float>({4}, {1, 2, 3, 4});
  Tensor idx = make<int64_t>({3, 1}, {0, 2, 0});
  Tensor upd = make<float>({3}, {10, 20, 30});
  auto add = run_single_node("ScatterND", {data, idx, upd}, 1, attrs({{"reduction", string_attr("add")}}), 18);
  ASSERT_EQ(add.size(), 1u);
  EXPECT_EQ(values<float>(add[0]), (std::vector<float>{41, 2, 23, 4}));
  auto mul = run_single_node("ScatterND", {data, idx, upd}, 1, attrs({{"reduction", string_attr("mul")}}), 18);
  EXPECT_EQ(values<float>(mul[0]), (std::vector<float>{300, 2, 60, 4}));
  auto mx = run_single_node("ScatterND", {data, idx, upd}, 1, attrs({{"reduction", string_attr("max")}}), 18);
  EXPECT_EQ(values<float>(mx[0]), (std::vector<float>{30, 2, 20, 4}));
  auto mn = run_single_node("ScatterND", {data, idx, upd}, 1, attrs({{"reduction", string_attr("min")}}), 18);
  EXPECT_EQ(values<float>(mn[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NE(run_error("ScatterND", {data, make<int64_t>({1, 1}, {4}), make<float>({1}, {0})}, 1).find("out of range"),
            std::string::npos);
  EXPECT_NE(run_error("ScatterND", {data, idx, upd}, 1, attrs({{"reduction", string_attr("max")}}), 16)
                .find("not valid at opset 16"),
            std::string::npos);
}

TEST(TensorOps, ScatterElementsAxis1) {
  Tensor data = iota_tensor<int64_t>({2, 3});
  Tensor idx = make<int64_t>({2, 2}, {2, 0, -1, 1});
  Tensor upd = make<int64_t>({2, 2}, {10, 20, 30, 40});
  auto out = run_single_node("ScatterElements", {data, idx, upd}, 1, attrs({{"axis", int_attr(1)}}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{20, 1, 10, 3, 40, 30}));
  auto add = run_single_node("ScatterElements", {data, idx, upd}, 1,
                             attrs({{"axis", int_attr(1)}, {"reduction", string_attr("add")}}), 16);
  EXPECT_EQ(values<int64_t>(add[0]), (std::vector<int64_t>{20, 1, 12, 3, 44, 35}));
  std::string err = run_error("ScatterElements", {data, make<int64_t>({1, 1}, {3}), make<int64_t>({1, 1}, {0})}, 1,
                              attrs({{"axis", int_attr(1)}}));
  EXPECT_NE(err.find("value 3 is out of range for axis 1 of size 3"), std::string::npos) << err;
}

// ------------------------------------------------------------------ Expand / Tile / Pad
TEST(TensorOps, ExpandAndTile) {
  Tensor x = make<float>({3, 1}, {1, 2, 3});
  auto e = run_single_node("Expand", {x, i64({2, 1, 4})}, 1);
  ASSERT_EQ(e.size(), 1u);
  ASSERT_EQ(e[0].shape(), (Shape{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) ASSERT_EQ(e[0].data<float>()[i], float((i / 4) % 3 + 1));
  Tensor y = iota_tensor<int16_t>({2, 3});
  auto t = run_single_node("Tile", {y, i64({2, 3})}, 1);
  ASSERT_EQ(t.size(), 1u);
  ASSERT_EQ(t[0].shape(), (Shape{4, 9}));
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 9; ++c) ASSERT_EQ(t[0].data<int16_t>()[r * 9 + c], int16_t((r % 2) * 3 + c % 3));
  EXPECT_NE(run_error("Expand", {x, i64({2, 4})}, 1).find("cannot be broadcast"), std::string::npos);
}

// numpy.pad reference for one axis
int64_t pad_ref(int64_t o, int64_t d, int64_t b, const std::string& mode) {
  int64_t i = o - b;
  if (i >= 0 && i < d) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : d - 1;
  if (mode == "wrap") return ((i % d) + d) % d;
  while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;  // reflect
  return i;
}

// CenterCropPad (opset 18) against an element-by-element reference: crops start at
// floor((d - n) / 2), pads put floor((n - d) / 2) zeros first.
TEST(TensorOps, CenterCropPadAgainstReference) {
  Tensor x = iota_tensor<int32_t>({3, 5, 4}, 1);
  struct Case {
    std::vector<int64_t> shape, axes;  // axes empty: all
  };
  const std::vector<Case> cases = {{{3, 5, 4}, {}},  {{1, 2, 7}, {}},    {{6, 3}, {1, 2}}, {{8}, {-2}},
                                   {{2}, {0}},        {{0, 9}, {0, -1}}, {{4, 4, 4}, {}},  {{7, 2}, {2, 0}}};
  for (const Case& c : cases) {
    Attributes a;
    if (!c.axes.empty()) a.set("axes", ints_attr(c.axes));
    auto out = run_single_node("CenterCropPad", {x, i64(c.shape)}, 1, a, 18);
    ASSERT_EQ(out.size(), 1u);
    Shape want = x.shape();
    std::vector<int64_t> first(3, 0);
    for (size_t i = 0; i < c.shape.size(); ++i) {
      int64_t ax = c.axes.empty() ? int64_t(i) : (c.axes[i] < 0 ? c.axes[i] + 3 : c.axes[i]);
      int64_t d = x.dim(int(ax)), n = c.shape[i];
      want[size_t(ax)] = n;
      first[size_t(ax)] = d >= n ? (d - n) / 2 : -((n - d) / 2);
    }
    ASSERT_EQ(out[0].shape(), want) << "case " << &c - cases.data();
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      int64_t rest = i, in = 0;
      bool inside = true;
      for (int k = 2, stride = 1; k >= 0; --k) {
        int64_t j = rest % want[size_t(k)] + first[size_t(k)];
        rest /= want[size_t(k)];
        inside = inside && j >= 0 && j < x.dim(k);
        in += j * stride;
        stride *= int(x.dim(k));
      }
      ASSERT_EQ(out[0].data<int32_t>()[i], inside ? x.data<int32_t>()[in] : 0) << "case " << &c - cases.data() << " at " << i;
    }
  }
  // Too few shape entries, a repeated axis, a negative size: one clear error each.
  for (auto [shape, axes, what] : std::vector<std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::string>>{
           {{2, 2}, {}, "has 2 entries for 3 axes"}, {{2, 2}, {1, -2}, "has a repeated axis"}, {{-1}, {0}, "negative entry"}}) {
    Attributes a;
    if (!axes.empty()) a.set("axes", ints_attr(axes));
    std::string m = run_error("CenterCropPad", {x, i64(shape)}, 1, a, 18);
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST(TensorOps, PadModesAgainstReference) {
  Shape s{3, 4};
  Tensor x = iota_tensor<float>(s, 1.f);
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    std::vector<int64_t> pads{2, -1, 1, 3};
    auto out = run_single_node("Pad", {x, i64(pads), make<float>({}, {-5})}, 1, attrs({{"mode", string_attr(mode)}}), 19);
    ASSERT_EQ(out.size(), 1u) << mode;
    Shape os{3 + 2 + 1, 4 - 1 + 3};
    ASSERT_EQ(out[0].shape(), os) << mode;
    for (int64_t r = 0; r < os[0]; ++r)
      for (int64_t c = 0; c < os[1]; ++c) {
        int64_t ir = pad_ref(r, 3, 2, mode), ic = pad_ref(c, 4, -1, mode);
        float want = (ir < 0 || ic < 0) ? -5.f : x.data<float>()[ir * 4 + ic];
        ASSERT_EQ(out[0].data<float>()[r * os[1] + c], want) << mode << " " << r << "," << c;
      }
  }
  // opset 18 axes input, opset 2 attributes
  {
    Model m = single_node_model("Pad", {x, i64({1, 2}), i64({-1})}, 1, attrs({{"mode", string_attr("edge")}}), 18);
    auto& ins = m.graph.nodes[0].inputs;
    ins.insert(ins.begin() + 2, kNoValue);  // constant_value omitted
    auto e = Engine::from_model(std::move(m));
    ASSERT_TRUE(e.has_value()) << e.status().message();
    auto out = (*e)->create_context()->run({{"in0", x}, {"in1", i64({1, 2})}, {"in2", i64({-1})}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    const Tensor& y = (*out)[0].tensor;
    ASSERT_EQ(y.shape(), (Shape{3, 7}));
    EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 3, 4, 4, 4, 5, 5, 6, 7, 8, 8, 8, 9, 9, 10, 11, 12, 12, 12}));
  }
  auto old = run_single_node("Pad", {x}, 1, attrs({{"pads", ints_attr({0, 1, 0, 1})}, {"value", float_attr(7)}}), 2);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].shape(), (Shape{3, 6}));
  EXPECT_EQ(old[0].data<float>()[0], 7.f);
  std::string err = run_error("Pad", {x, i64({1, 2})}, 1);
  EXPECT_NE(err.find("must have 4 entries"), std::string::npos) << err;
}

// ------------------------------------------------------------------ Space/depth
TEST(TensorOps, DepthToSpaceInvertsSpaceToDepth) {
  Tensor x = random_tensor({2, 3, 4, 6}, 11);
  auto sd = run_single_node("SpaceToDepth", {x}, 1, attrs({{"blocksize", int_attr(2)}}));
  ASSERT_EQ(sd.size(), 1u);
  ASSERT_EQ(sd[0].shape(), (Shape{2, 12, 2, 3}));
  // reference SpaceToDepth: out[n, (bh*b + bw)*C + c, h, w] = x[n, c, h*b + bh, w*b + bw]
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t oc = 0; oc < 12; ++oc)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 3; ++w) {
          int64_t c = oc % 3, bb = oc / 3, bh = bb / 2, bw = bb % 2;
          ASSERT_EQ(sd[0].data<float>()[((n * 12 + oc) * 2 + h) * 3 + w],
                    x.data<float>()[((n * 3 + c) * 4 + h * 2 + bh) * 6 + w * 2 + bw]);
        }
  auto ds = run_single_node("DepthToSpace", {sd[0]}, 1, attrs({{"blocksize", int_attr(2)}}));
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(max_abs_diff(ds[0], x), 0);
  EXPECT_NE(run_error("DepthToSpace", {x}, 1, attrs({{"blocksize", int_attr(2)}})).find("not divisible"),
            std::string::npos);
}

// ------------------------------------------------------------------ Misc
TEST(TensorOps, ConstantAndConstantOfShape) {
  auto c = run_single_node("Constant", {}, 1, attrs({{"value_ints", ints_attr({3, 1, 2})}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(values<int64_t>(c[0]), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_NE(run_error("Constant", {}, 1, attrs({{"value_string", string_attr("hi")}})).find("not supported"),
            std::string::npos);
  Attribute v;
  v.kind = Attribute::Kind::kTensor;
  v.t = make<int32_t>({1}, {9});
  auto cs = run_single_node("ConstantOfShape", {i64({2, 2})}, 1, attrs({{"value", v}}));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(values<int32_t>(cs[0]), (std::vector<int32_t>{9, 9, 9, 9}));
  EXPECT_NE(run_error("ConstantOfShape", {i64({2, -1})}, 1).find("negative"), std::string::npos);
}

// An output larger than the machine's memory (466 GiB of floats, under the kernels' own 1 TiB
// limit) is an error naming the node, not a crash: the allocation fails before any memory is
// touched (host_memory.h). A count past int64 does not wrap around to a small buffer.
TEST(TensorOps, OutputTooLargeForTheMachineIsAnError) {
  const std::vector<int64_t> dims{1000, 1000, 125000};
  const std::string err = run_error("ConstantOfShape", {i64(dims)}, 1);
  EXPECT_NE(err.find("node 'ConstantOfShape_0' (ConstantOfShape): out of host memory for its outputs (float32 1000x1000x125000)"),
            std::string::npos)
      << err;
  EXPECT_THROW(Tensor(DType::kFloat32, {4000000000, 4000000000, 4000000000}), std::bad_alloc);
  EXPECT_EQ(shape_numel({4000000000, 4000000000, 4000000000}), std::numeric_limits<int64_t>::max());
}

TEST(TensorOps, RangeTriluEyeLike) {
  auto r = run_single_node("Range", {make<int32_t>({}, {10}), make<int32_t>({}, {1}), make<int32_t>({}, {-3})}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(values<int32_t>(r[0]), (std::vector<int32_t>{10, 7, 4}));
  EXPECT_NE(run_error("Range", {make<float>({}, {0}), make<float>({}, {1}), make<float>({}, {0})}, 1).find("delta"),
            std::string::npos);
  Tensor x = iota_tensor<float>({2, 3, 4}, 1.f);
  for (int64_t k = -3; k <= 4; ++k)
    for (int upper = 0; upper < 2; ++upper) {
      auto t = run_single_node("Trilu", {x, i64s(k)}, 1, attrs({{"upper", int_attr(upper)}}), 14);
      ASSERT_EQ(t.size(), 1u);
      for (int64_t i = 0; i < 24; ++i) {
        int64_t row = (i / 4) % 3, col = i % 4;
        bool keep = upper ? col - row >= k : col - row <= k;
        ASSERT_EQ(t[0].data<float>()[i], keep ? x.data<float>()[i] : 0.f);
      }
    }
  auto e = run_single_node("EyeLike", {Tensor(DType::kInt32, {3, 4})}, 1, attrs({{"k", int_attr(1)}}));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(values<int32_t>(e[0]), (std::vector<int32_t>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(TensorOps, OneHotNonZeroCompress) {
  auto oh = run_single_node("OneHot", {make<int64_t>({3}, {0, -1, 5}), i64s(3), make<float>({2}, {0, 1})}, 1,
                            attrs({{"axis", int_attr(0)}}));
  ASSERT_EQ(oh.size(), 1u);
  EXPECT_EQ(oh[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(values<float>(oh[0]), (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 1, 0}));
  auto nz = run_single_node("NonZero", {make<int32_t>({2, 2}, {1, 0, 0, 3})}, 1);
  ASSERT_EQ(nz.size(), 1u);
  EXPECT_EQ(nz[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>(nz[0]), (std::vector<int64_t>{0, 1, 0, 1}));
  Tensor cond(DType::kBool, {3});
  cond.data<bool>()[0] = true;
  cond.data<bool>()[2] = true;
  auto cp = run_single_node("Compress", {iota_tensor<float>({2, 3}), cond}, 1, attrs({{"axis", int_attr(1)}}));
  ASSERT_EQ(cp.size(), 1u);
  EXPECT_EQ(values<float>(cp[0]), (std::vector<float>{0, 2, 3, 5}));
}

TEST(TensorOps, ReverseSequenceAndCumSum) {
  Tensor x = iota_tensor<float>({4, 2});  // time-major
  auto rs = run_single_node("ReverseSequence", {x, i64({3, 1})}, 1);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(values<float>(rs[0]), (std::vector<float>{4, 1, 2, 3, 0, 5, 6, 7}));
  EXPECT_NE(run_error("ReverseSequence", {x, i64({5, 1})}, 1).find("out of range"), std::string::npos);
  Tensor c = make<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto cs = run_single_node("CumSum", {c, make<int32_t>({}, {1})}, 1, attrs({{"exclusive", int_attr(1)}, {"reverse", int_attr(1)}}));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(values<double>(cs[0]), (std::vector<double>{5, 3, 0, 11, 6, 0}));
}

TEST(TensorOps, UniqueSortedAndUnsorted) {
  Tensor x = make<float>({6}, {2, 1, 1, 3, 4, 3});
  auto u = run_single_node("Unique", {x}, 4, attrs({{"sorted", int_attr(0)}}));
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(values<float>(u[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  Tensor m = make<int32_t>({3, 2}, {1, 1, 0, 1, 1, 1});
  auto ua = run_single_node("Unique", {m}, 4, attrs({{"axis", int_attr(0)}}));
  ASSERT_EQ(ua.size(), 4u);
  EXPECT_EQ(ua[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(ua[0]), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(values<int64_t>(ua[2]), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(values<int64_t>(ua[3]), (std::vector<int64_t>{1, 2}));
  // Slices of no elements along the axis (found by OpFuzz under UBSan: a copy from a null
  // buffer): they are all equal, so one of them is unique.
  Tensor empty(DType::kFloat32, {2, 3, 0});
  auto ue = run_single_node("Unique", {empty}, 4, attrs({{"axis", int_attr(1)}}));
  ASSERT_EQ(ue.size(), 4u);
  EXPECT_EQ(ue[0].shape(), (Shape{2, 1, 0}));
  EXPECT_EQ(values<int64_t>(ue[2]), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(values<int64_t>(ue[3]), (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace ingot::testing
