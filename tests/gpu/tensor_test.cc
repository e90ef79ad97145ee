// CUDA data-movement kernels (tensor_*.cc/.cu) against the CPU kernels: Transpose (tiled and
// vectorised paths), Concat/Split, Slice (negative steps), Gather (embedding lookups),
// GatherElements/GatherND, the scatters, Expand/Tile, Pad, CumSum, Range, ConstantOfShape,
// EyeLike, Trilu, OneHot, views checked through a following op, and the cases supports()
// refuses (they still match through the CPU fallback). Results must match exactly, except
// CumSum's float sums. Operands whose values the kernels need at plan time (starts, pads,
// axes) are initializers; data is a graph input, so the node is not folded away.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "gpu_test_util.h"
#include "ir/dispatch.h"

namespace ingot::testing {
namespace {

// Builds models of one or more nodes: graph inputs (fed at run time) and initializers.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.path = "test:tensor";
    model_.ir_version = 8;
    model_.opsets[""] = opset;
  }
  std::string input(const Tensor& t) {
    std::string name = "x" + std::to_string(count_++);
    ValueId id = model_.graph.intern(name);
    model_.graph.value(id).dtype = t.dtype();
    model_.graph.inputs.push_back(id);
    feeds_[name] = t;
    return name;
  }
  std::string constant(const Tensor& t) {
    std::string name = "c" + std::to_string(count_++);
    ValueId id = model_.graph.intern(name);
    model_.graph.value(id).dtype = t.dtype();
    model_.graph.initializers[id] = t;
    return name;
  }
  // Adds a node; "" is an omitted optional input. Returns the output names.
  std::vector<std::string> node(const std::string& op, const std::vector<std::string>& ins, int nout = 1,
                                Attributes attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = op + "_" + std::to_string(count_++);
    n.attrs = std::move(attrs);
    for (const auto& s : ins) n.inputs.push_back(s.empty() ? kNoValue : model_.graph.intern(s));
    std::vector<std::string> outs;
    for (int i = 0; i < nout; ++i) {
      outs.push_back(n.name + "_out" + std::to_string(i));
      n.outputs.push_back(model_.graph.intern(outs.back()));
    }
    model_.graph.nodes.push_back(std::move(n));
    return outs;
  }
  void output(const std::string& name) { model_.graph.outputs.push_back(model_.graph.find(name)); }
  void outputs(const std::vector<std::string>& names) {
    for (const auto& s : names) output(s);
  }
  const Model& model() const { return model_; }
  const std::map<std::string, Tensor>& feeds() const { return feeds_; }

 private:
  Model model_;
  std::map<std::string, Tensor> feeds_;
  int count_ = 0;
};

Attributes attrs_of(std::initializer_list<std::pair<const char*, Attribute>> list) {
  Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

Tensor ints(std::vector<int64_t> v, Shape shape = {}) {
  if (shape.empty() && v.size() != 1) shape = {int64_t(v.size())};
  if (shape.empty()) shape = {1};
  Tensor t(DType::kInt64, shape);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}
Tensor scalar_int(int64_t v) {
  Tensor t(DType::kInt64, {});
  t.data<int64_t>()[0] = v;
  return t;
}
Tensor as_int32(const Tensor& t) {
  Tensor r(DType::kInt32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<int32_t>()[i] = int32_t(t.data<int64_t>()[i]);
  return r;
}

// Integers are drawn from a wide range so that a misplaced element shows.
Tensor data_of(DType dt, const Shape& shape, uint32_t seed) {
  bool integer = dt == DType::kInt64 || dt == DType::kInt32;
  return random_of(dt, shape, seed, integer ? -100000 : -1, integer ? 100000 : 1);
}

// Uniform int64 indices in [lo, hi).
Tensor index_of(const Shape& shape, int64_t lo, int64_t hi, uint32_t seed) {
  Tensor t(DType::kInt64, shape);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi - 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = d(rng);
  return t;
}

const std::vector<DType> kMoveTypes = {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool};

// One node on data (a graph input) and constant operands; outputs compared exactly.
void check_node(const std::string& op, const Tensor& data, const std::vector<Tensor>& constants, int nout,
                Attributes attrs, const std::string& what, int opset = 17, double atol = 0, double rtol = 0) {
  ModelBuilder b(opset);
  std::vector<std::string> ins = {b.input(data)};
  for (const Tensor& c : constants) ins.push_back(c.defined() ? b.constant(c) : std::string());
  b.outputs(b.node(op, ins, nout, std::move(attrs)));
  expect_cuda_matches_cpu(b.model(), b.feeds(), atol, rtol, op + " " + what);
}

// ------------------------------------------------------------------ views
// A view alone is an aliased buffer; a Transpose after it reads the view's shape.
TEST(GpuTensor, ViewsFeedingTranspose) {
  INGOT_REQUIRE_GPU();
  Tensor x = data_of(DType::kFloat32, {2, 3, 4, 5}, 1);
  struct Case {
    std::string op;
    std::vector<Tensor> consts;
    Attributes attrs;
    std::vector<int64_t> perm;
  };
  std::vector<Case> cases = {
      {"Reshape", {ints({6, -1, 2})}, {}, {2, 0, 1}},
      {"Reshape", {ints({0, 0, 20})}, {}, {2, 1, 0}},
      {"Flatten", {}, attrs_of({{"axis", int_attr(-2)}}), {1, 0}},
      {"Unsqueeze", {ints({0, -1})}, {}, {5, 1, 0, 4, 3, 2}},
      {"Identity", {}, {}, {3, 1, 2, 0}},
      {"Dropout", {}, {}, {0, 3, 2, 1}},
  };
  for (const auto& c : cases) {
    ModelBuilder b;
    std::vector<std::string> ins = {b.input(x)};
    for (const Tensor& t : c.consts) ins.push_back(b.constant(t));
    auto v = b.node(c.op, ins, 1, c.attrs);
    b.outputs(b.node("Transpose", v, 1, attrs_of({{"perm", ints_attr(c.perm)}})));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, c.op + " then Transpose");
  }
  // Squeeze of a size-1 axis, then a transpose of the rest.
  Tensor y = data_of(DType::kInt64, {3, 1, 7, 5}, 2);
  ModelBuilder b;
  auto sq = b.node("Squeeze", {b.input(y), b.constant(ints({1}))});
  b.outputs(b.node("Transpose", sq, 1, attrs_of({{"perm", ints_attr({2, 0, 1})}})));
  expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Squeeze then Transpose");
}

// A view of a view, and two readers of one view.
TEST(GpuTensor, ViewChains) {
  INGOT_REQUIRE_GPU();
  Tensor x = data_of(DType::kFloat16, {4, 6, 8}, 3);
  ModelBuilder b;
  auto r = b.node("Reshape", {b.input(x), b.constant(ints({24, 8}))});
  auto u = b.node("Unsqueeze", {r[0], b.constant(ints({0}))});
  auto t1 = b.node("Transpose", u, 1, attrs_of({{"perm", ints_attr({2, 1, 0})}}));
  auto t2 = b.node("Transpose", r, 1, attrs_of({{"perm", ints_attr({1, 0})}}));
  b.outputs({t1[0], t2[0]});
  expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Reshape, Unsqueeze, two Transposes");
}

// ------------------------------------------------------------------ Transpose
TEST(GpuTensor, Transpose) {
  INGOT_REQUIRE_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{67, 129}, {1, 0}},                       // tiled, partial tiles on both sides
      {{2, 3, 33, 40}, {0, 1, 3, 2}},            // batched matrix transpose (attention K)
      {{2, 33, 3, 40}, {0, 2, 1, 3}},            // heads split: contiguous 40-element rows
      {{2, 33, 3, 4}, {0, 2, 1, 3}},             // short rows
      {{5, 1, 7, 1, 9}, {4, 3, 2, 1, 0}},        // size-1 dims
      {{3, 4, 5, 6, 7, 2}, {5, 3, 1, 0, 2, 4}},  // rank 6
      {{8, 9, 10}, {2, 0, 1}},
      {{8, 9, 10}, {1, 2, 0}},
      {{1, 1, 37}, {2, 0, 1}},  // same order: a plain copy
      {{3, 5}, {0, 1}},
      {{4, 130, 7}, {0, 2, 1}},  // tiled with a short contiguous side
  };
  uint32_t seed = 10;
  for (DType dt : kMoveTypes)
    for (const auto& c : cases)
      check_node("Transpose", data_of(dt, c.shape, seed++), {}, 1, attrs_of({{"perm", ints_attr(c.perm)}}),
                 dtype_name(dt) + " " + shape_str(c.shape) + " perm " + shape_str(c.perm));
  // Default perm: reversed axes; int32 data.
  check_node("Transpose", data_of(DType::kInt32, {3, 17, 40}, 7), {}, 1, {}, "int32 no perm");
  // Without CUDA graphs too.
  ModelBuilder b;
  b.outputs(b.node("Transpose", {b.input(data_of(DType::kFloat32, {45, 70}, 8))}));
  expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Transpose without graph", false);
}

TEST(GpuTensor, DepthToSpaceSpaceToDepth) {
  INGOT_REQUIRE_GPU();
  Tensor x = data_of(DType::kFloat32, {2, 12, 5, 7}, 20);
  for (const char* mode : {"DCR", "CRD"})
    check_node("DepthToSpace", x, {}, 1, attrs_of({{"blocksize", int_attr(2)}, {"mode", string_attr(mode)}}), mode);
  check_node("SpaceToDepth", data_of(DType::kFloat16, {2, 3, 6, 9}, 21), {}, 1, attrs_of({{"blocksize", int_attr(3)}}),
             "blocksize 3");
}

// ------------------------------------------------------------------ Concat / Split
TEST(GpuTensor, Concat) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 30;
  for (DType dt : kMoveTypes) {
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      ModelBuilder b;
      std::vector<std::string> ins;
      for (int64_t k : {3, 0, 5, 1}) {  // one input is empty along the axis
        Shape s = {2, 4, 6};
        s[size_t(axis < 0 ? axis + 3 : axis)] = k;
        ins.push_back(b.input(data_of(dt, s, seed++)));
      }
      b.outputs(b.node("Concat", ins, 1, attrs_of({{"axis", int_attr(axis)}})));
      expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Concat " + dtype_name(dt) + " axis " + std::to_string(axis));
    }
  }
  // More inputs than one launch takes (64), of odd widths.
  ModelBuilder b;
  std::vector<std::string> ins;
  for (int i = 0; i < 70; ++i) ins.push_back(b.input(data_of(DType::kFloat32, {3, 1 + i % 5}, seed++)));
  b.outputs(b.node("Concat", ins, 1, attrs_of({{"axis", int_attr(1)}})));
  expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Concat of 70 inputs");
  // Wide rows: 16-byte units (an attention mask built from pieces).
  ModelBuilder w;
  auto wa = w.input(data_of(DType::kFloat16, {8, 128}, seed++)),
       wb = w.input(data_of(DType::kFloat16, {8, 64}, seed++));
  w.outputs(w.node("Concat", {wa, wb}, 1, attrs_of({{"axis", int_attr(1)}})));
  expect_cuda_matches_cpu(w.model(), w.feeds(), 0, 0, "Concat wide rows");
}

TEST(GpuTensor, Split) {
  INGOT_REQUIRE_GPU();
  Tensor x = data_of(DType::kFloat32, {6, 10, 4}, 40);
  check_node("Split", x, {}, 3, attrs_of({{"axis", int_attr(0)}}), "equal parts");
  check_node("Split", x, {ints({2, 5, 3})}, 3, attrs_of({{"axis", int_attr(-2)}}), "split input");
  check_node("Split", x, {ints({1, 0, 3})}, 3, attrs_of({{"axis", int_attr(2)}}), "an empty part");
  check_node("Split", data_of(DType::kInt64, {7, 3}, 41), {}, 3, attrs_of({{"num_outputs", int_attr(3)}}),
             "num_outputs, uneven", 18);
  check_node("Split", data_of(DType::kBool, {5, 9}, 42), {}, 2,
             attrs_of({{"axis", int_attr(1)}, {"split", ints_attr({4, 5})}}), "split attribute", 11);
  check_node("Split", data_of(DType::kFloat16, {2, 3, 96}, 43), {}, 3, attrs_of({{"axis", int_attr(-1)}}),
             "fp16 last axis");
}

// ------------------------------------------------------------------ Slice
TEST(GpuTensor, Slice) {
  INGOT_REQUIRE_GPU();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes/steps: input omitted
  };
  const std::vector<Case> cases = {
      {{1, -6}, {5, 100}, {0, 2}, {2, 3}},
      {{-1}, {-100}, {1}, {-2}},  // back to the start, negative step
      {{5, 6}, {0, 0}, {0, -2}, {-1, -3}},
      {{0}, {8}, {2}, {10}},     // a step larger than the axis
      {{3}, {3}, {0}, {}},       // empty
      {{0, 1}, {4, 6}, {}, {}},  // no axes, no steps
      {{-100, 2}, {100, -1}, {-1, -3}, {1, 1}},
      {{7, 7, 8}, {-100, -100, -100}, {0, 1, 2}, {-1, -1, -1}},  // reverse everything
  };
  uint32_t seed = 50;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {6, 7, 8}, seed++);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      std::vector<Tensor> consts = {ints(c.starts), ints(c.ends), c.axes.empty() ? Tensor() : ints(c.axes),
                                    c.steps.empty() ? Tensor() : ints(c.steps)};
      while (!consts.back().defined()) consts.pop_back();
      check_node("Slice", x, consts, 1, {}, dtype_name(dt) + " case " + std::to_string(i));
    }
  }
  // Aligned inner runs move in 16-byte units; int32 starts.
  check_node("Slice", data_of(DType::kFloat32, {4, 64}, seed++),
             {as_int32(ints({16})), as_int32(ints({48})), as_int32(ints({1}))}, 1, {}, "aligned rows");
  // Opset 9: starts/ends/axes are attributes.
  check_node("Slice", data_of(DType::kFloat32, {5, 9}, seed++), {}, 1,
             attrs_of({{"starts", ints_attr({1, -4})}, {"ends", ints_attr({4, 1000})}, {"axes", ints_attr({0, 1})}}),
             "opset 9", 9);
}

// ------------------------------------------------------------------ Gather family
TEST(GpuTensor, Gather) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 60;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {5, 6, 7}, seed++);
    // Runtime indices (negative ones included), int64 and int32.
    for (int64_t axis : {0, 1, -1}) {
      int64_t dim = x.dim(int(axis < 0 ? axis + 3 : axis));
      Tensor idx = index_of({2, 3}, -dim, dim, seed++);
      for (bool i32 : {false, true}) {
        ModelBuilder b;
        b.outputs(b.node("Gather", {b.input(x), b.input(i32 ? as_int32(idx) : idx)}, 1,
                         attrs_of({{"axis", int_attr(axis)}})));
        expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0,
                                "Gather " + dtype_name(dt) + " axis " + std::to_string(axis) + (i32 ? " int32" : ""));
      }
    }
    // Constant indices: a scalar (drops the axis) and a 1-D list.
    check_node("Gather", x, {scalar_int(-2)}, 1, attrs_of({{"axis", int_attr(1)}}), dtype_name(dt) + " scalar index");
    check_node("Gather", x, {ints({4, 0, 4})}, 1, attrs_of({{"axis", int_attr(0)}}), dtype_name(dt) + " list");
  }
}

// The embedding lookup of a transformer: a [vocab, hidden] table (a weight) gathered by
// [batch, seq] ids, vectorised along hidden; odd widths take the element path.
TEST(GpuTensor, GatherEmbedding) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t hidden : {768, 37}) {
      Tensor table = random_of(dt, {3001, hidden}, 70);
      Tensor ids = index_of({2, 9}, 0, 3001, 71);
      ids.data<int64_t>()[3] = 3000;  // the last row
      ids.data<int64_t>()[4] = -1;    // counted from the end
      ModelBuilder b;
      b.outputs(b.node("Gather", {b.constant(table), b.input(ids)}));
      expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0,
                              "embedding " + dtype_name(dt) + " hidden " + std::to_string(hidden));
    }
  }
}

// Indices known at plan time are checked with the CPU kernel's error.
TEST(GpuTensor, GatherConstantIndexOutOfRange) {
  INGOT_REQUIRE_GPU();
  ModelBuilder b;
  b.outputs(b.node("Gather", {b.input(data_of(DType::kFloat32, {5, 4}, 80)), b.constant(ints({0, 9}))}));
  auto error_on = [&](const std::string& device) {
    EngineOptions o;
    o.device = device;
    auto e = Engine::from_model(b.model(), o);
    if (!e) return e.status().message();
    auto out = (*e)->create_context()->run(b.feeds());
    return out ? std::string() : out.status().message();
  };
  const std::string want = "input 1 (indices) value 9 is out of range for axis 0 of size 5";
  EXPECT_NE(error_on("cpu").find(want), std::string::npos) << error_on("cpu");
  EXPECT_NE(error_on("cuda").find(want), std::string::npos) << error_on("cuda");
}

// Indices computed at run time cannot be checked on the host: out-of-range ones read zeros.
TEST(GpuTensor, GatherRuntimeIndexOutOfRangeReadsZeros) {
  INGOT_REQUIRE_GPU();
  Tensor x = data_of(DType::kFloat32, {5, 4}, 81);
  ModelBuilder b;
  b.outputs(b.node("Gather", {b.input(x), b.input(ints({1, 7, -1, -6}))}));
  auto out = run_model_on(b.model(), b.feeds(), "cuda");
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].shape(), (Shape{4, 4}));
  const float* y = out[0].data<float>();
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(y[j], x.data<float>()[4 + j]);
    EXPECT_EQ(y[4 + j], 0.f);
    EXPECT_EQ(y[8 + j], x.data<float>()[16 + j]);
    EXPECT_EQ(y[12 + j], 0.f);
  }
}

TEST(GpuTensor, GatherElements) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 90;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {4, 5, 6}, seed++);
    for (int64_t axis : {0, 1, 2, -2}) {
      int a = int(axis < 0 ? axis + 3 : axis);
      Shape is = {3, 4, 6};
      is[size_t(a)] = 7;  // the indexed axis may be longer than data's
      Tensor idx = index_of(is, -x.dim(a), x.dim(a), seed++);
      ModelBuilder b;
      b.outputs(b.node("GatherElements", {b.input(x), b.input(axis == 1 ? as_int32(idx) : idx)}, 1,
                       attrs_of({{"axis", int_attr(axis)}})));
      expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0,
                              "GatherElements " + dtype_name(dt) + " axis " + std::to_string(axis));
    }
  }
  check_node("GatherElements", data_of(DType::kFloat32, {9}, seed++), {index_of({12}, -9, 9, seed)}, 1, {}, "1-D");
}

TEST(GpuTensor, GatherND) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 100;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {3, 4, 5}, seed++);
    check_node("GatherND", x, {ints({0, 1, 2, 3, 1, -1, -3, 0}, {4, 2})}, 1, {}, dtype_name(dt) + " pairs");
    check_node("GatherND", x, {ints({2, 0, 1}, {3, 1})}, 1, {}, dtype_name(dt) + " rows");
    check_node("GatherND", x, {ints({0, 1, 2, 2, 3, 4}, {2, 3})}, 1, {}, dtype_name(dt) + " elements");
    // batch_dims = 1, runtime int32 indices.
    ModelBuilder b;
    b.outputs(b.node("GatherND", {b.input(x), b.input(as_int32(index_of({3, 2, 1}, -4, 4, seed++)))}, 1,
                     attrs_of({{"batch_dims", int_attr(1)}})));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "GatherND batch_dims 1 " + dtype_name(dt));
  }
  // Rows of 64 floats move in 16-byte units.
  check_node("GatherND", data_of(DType::kFloat32, {6, 64}, seed), {ints({5, 0, 2}, {3, 1})}, 1, {}, "wide rows");
}

// Scatters with distinct target positions (duplicates are undefined in ONNX).
TEST(GpuTensor, ScatterND) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 110;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {4, 5, 6}, seed++);
    ModelBuilder b;
    b.outputs(
        b.node("ScatterND", {b.input(x), b.constant(ints({1, -1}, {2, 1})), b.input(data_of(dt, {2, 5, 6}, seed++))}));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "ScatterND slices " + dtype_name(dt));
    ModelBuilder e;
    e.outputs(e.node("ScatterND",
                     {e.input(x), e.input(ints({0, 1, 2, 4, 3, 0}, {3, 2})), e.input(data_of(dt, {3, 6}, seed++))}));
    expect_cuda_matches_cpu(e.model(), e.feeds(), 0, 0, "ScatterND rows " + dtype_name(dt));
  }
}

TEST(GpuTensor, ScatterElements) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 120;
  for (DType dt : kMoveTypes) {
    // axis 0: column j gets rows j % 4 and (j + 1) % 4 (the second written as a negative).
    Tensor idx0(DType::kInt64, {2, 6});
    for (int j = 0; j < 6; ++j) {
      idx0.data<int64_t>()[j] = j % 4;
      idx0.data<int64_t>()[6 + j] = (j + 1) % 4 - 4;
    }
    check_node("ScatterElements", data_of(dt, {4, 6}, seed++), {idx0, data_of(dt, {2, 6}, seed++)}, 1,
               attrs_of({{"axis", int_attr(0)}}), dtype_name(dt) + " axis 0");
    // axis -1: row i gets columns (2k + i) % 7.
    Tensor idx1(DType::kInt64, {3, 4});
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 4; ++k) idx1.data<int64_t>()[i * 4 + k] = (2 * k + i) % 7;
    ModelBuilder b;
    b.outputs(
        b.node("ScatterElements",
               {b.input(data_of(dt, {3, 7}, seed++)), b.input(as_int32(idx1)), b.input(data_of(dt, {3, 4}, seed++))}, 1,
               attrs_of({{"axis", int_attr(-1)}})));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "ScatterElements axis -1 " + dtype_name(dt));
  }
}

TEST(GpuTensor, OneHot) {
  INGOT_REQUIRE_GPU();
  Tensor idx = index_of({2, 5}, -4, 6, 130);  // 4 and 5 are out of range: all "off"
  Tensor values(DType::kFloat32, {2});
  values.data<float>()[0] = -0.5f;
  values.data<float>()[1] = 2.f;
  for (int64_t axis : {-1, 0, 1}) {
    check_node("OneHot", idx, {scalar_int(4), values}, 1, attrs_of({{"axis", int_attr(axis)}}),
               "axis " + std::to_string(axis));
  }
  Tensor fidx(DType::kFloat32, {7});
  for (int i = 0; i < 7; ++i) fidx.data<float>()[i] = float(i - 3);
  check_node("OneHot", fidx, {scalar_int(5), ints({3, 9})}, 1, {}, "float indices, int64 values");
}

// ------------------------------------------------------------------ Expand / Tile / Pad
TEST(GpuTensor, Expand) {
  INGOT_REQUIRE_GPU();
  struct Case {
    Shape in;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {{2, 1, 1, 9}, {2, 4, 9, 9}},  // an attention mask [B, 1, 1, S] to [B, H, S, S]
      {{3}, {2, 4, 3}},
      {{4, 1}, {1, 5}},
      {{1, 6, 1}, {3, 1, 5}},
      {{5, 8}, {5, 8}},  // no broadcast: a copy
      {{}, {3, 2}},
      {{2, 1, 64}, {2, 7, 64}},  // 16-byte units
  };
  uint32_t seed = 140;
  for (DType dt : kMoveTypes)
    for (const auto& c : cases)
      check_node("Expand", data_of(dt, c.in, seed++), {ints(c.shape)}, 1, {},
                 dtype_name(dt) + " " + shape_str(c.in) + " to " + shape_str(c.shape));
}

TEST(GpuTensor, Tile) {
  INGOT_REQUIRE_GPU();
  struct Case {
    Shape in;
    std::vector<int64_t> reps;
  };
  const std::vector<Case> cases = {
      {{5}, {3}},       {{2, 3}, {1, 4}}, {{2, 3}, {3, 1}}, {{2, 3, 4}, {2, 1, 3}}, {{3, 1, 2, 4}, {2, 2, 2, 2}},
      {{4, 2}, {0, 2}},
  };
  uint32_t seed = 150;
  for (DType dt : kMoveTypes)
    for (const auto& c : cases)
      check_node("Tile", data_of(dt, c.in, seed++), {ints(c.reps)}, 1, {},
                 dtype_name(dt) + " " + shape_str(c.in) + " reps " + shape_str(c.reps));
}

TEST(GpuTensor, Pad) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 160;
  const std::vector<std::vector<int64_t>> pads = {
      {1, 2, 0, 3, 0, 1}, {0, 0, 2, 0, 0, 3}, {2, -1, 1, 1, 0, -2},  // negative pads crop
  };
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
    Tensor x = data_of(dt, {3, 4, 5}, seed++);
    for (const char* mode : {"constant", "reflect", "edge", "wrap"})
      for (size_t i = 0; i < pads.size(); ++i)
        check_node("Pad", x, {ints(pads[i])}, 1, attrs_of({{"mode", string_attr(mode)}}),
                   dtype_name(dt) + " " + mode + " pads " + std::to_string(i), 19);
    // A constant value, known at plan time or read on the device.
    Tensor v = data_of(dt, {}, seed++);
    check_node("Pad", x, {ints(pads[0]), v}, 1, {}, dtype_name(dt) + " constant_value");
    ModelBuilder b;
    b.outputs(b.node("Pad", {b.input(x), b.constant(ints(pads[2])), b.input(v)}));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Pad runtime constant_value " + dtype_name(dt));
  }
  // axes (opset 18), and the opset 2 attributes.
  check_node("Pad", data_of(DType::kFloat32, {3, 4, 5}, seed++), {ints({1, 2, 2, 0}), Tensor(), ints({-1, 0})}, 1,
             attrs_of({{"mode", string_attr("reflect")}}), "axes", 18);
  check_node("Pad", data_of(DType::kFloat32, {3, 4}, seed++), {}, 1,
             attrs_of({{"pads", ints_attr({1, 0, 2, 3})}, {"value", float_attr(1.5f)}}), "opset 2", 2);
}

// ------------------------------------------------------------------ CumSum / Range / fills
TEST(GpuTensor, CumSum) {
  INGOT_REQUIRE_GPU();
  struct Case {
    DType dt;
    Shape shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {DType::kFloat32, {3, 300}, 1},  // long rows: the block scan
      {DType::kFloat32, {3, 300}, 0},  // columns
      {DType::kFloat32, {4, 5, 6}, -2}, {DType::kInt64, {4, 1000}, -1},
      {DType::kInt64, {2, 9}, 1},  // a position-id cumsum over a mask
      {DType::kInt32, {70, 3}, 0},      {DType::kFloat16, {2, 100}, 1},
  };
  uint32_t seed = 170;
  for (const auto& c : cases) {
    bool fp = c.dt == DType::kFloat32 || c.dt == DType::kFloat16;
    Tensor x = fp ? random_of(c.dt, c.shape, seed++) : random_of(c.dt, c.shape, seed++, -50, 50);
    for (int flags = 0; flags < 4; ++flags) {
      double atol = c.dt == DType::kFloat16 ? 5e-2 : fp ? 1e-3 : 0;
      double rtol = c.dt == DType::kFloat16 ? 1e-2 : fp ? 1e-5 : 0;
      check_node("CumSum", x, {scalar_int(c.axis)}, 1,
                 attrs_of({{"exclusive", int_attr(flags & 1)}, {"reverse", int_attr(flags >> 1)}}),
                 dtype_name(c.dt) + " " + shape_str(c.shape) + " axis " + std::to_string(c.axis) + " flags " +
                     std::to_string(flags),
                 17, atol, rtol);
    }
  }
}

// Outputs over 65536 elements: smaller ones are folded on the host and never reach the GPU.
TEST(GpuTensor, RangeConstantOfShapeEyeLike) {
  INGOT_REQUIRE_GPU();
  {
    ModelBuilder b;
    b.outputs(b.node("Range", {b.constant(scalar_int(-7)), b.constant(scalar_int(200000)), b.constant(scalar_int(3))}));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Range int64");
  }
  {
    auto f = [](float v) {
      Tensor t(DType::kFloat32, {});
      t.data<float>()[0] = v;
      return t;
    };
    ModelBuilder b;
    b.outputs(b.node("Range", {b.constant(f(0.5f)), b.constant(f(8000.f)), b.constant(f(0.1f))}));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Range float32");
  }
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kBool}) {
    Tensor value = data_of(dt, {1}, 180);
    if (dt == DType::kBool) value.data<bool>()[0] = true;
    Attributes a;
    Attribute v;
    v.kind = Attribute::Kind::kTensor;
    v.t = value;
    a.set("value", v);
    ModelBuilder b;
    b.outputs(b.node("ConstantOfShape", {b.constant(ints({300, 301}))}, 1, a));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "ConstantOfShape " + dtype_name(dt));
  }
  for (int64_t k : {0, 5, -3}) {
    check_node("EyeLike", data_of(DType::kFloat32, {300, 301}, 181), {}, 1, attrs_of({{"k", int_attr(k)}}),
               "k " + std::to_string(k));
  }
  check_node("EyeLike", data_of(DType::kFloat32, {257, 256}, 182), {}, 1,
             attrs_of({{"dtype", int_attr(int64_t(DType::kInt64))}}), "int64");
}

TEST(GpuTensor, Trilu) {
  INGOT_REQUIRE_GPU();
  uint32_t seed = 190;
  for (DType dt : kMoveTypes) {
    Tensor x = data_of(dt, {2, 3, 37, 45}, seed++);
    for (int upper : {0, 1}) {
      for (int64_t k : {0, -3, 10, 100}) {
        check_node("Trilu", x, {scalar_int(k)}, 1, attrs_of({{"upper", int_attr(upper)}}),
                   dtype_name(dt) + " upper " + std::to_string(upper) + " k " + std::to_string(k));
      }
      check_node("Trilu", x, {}, 1, attrs_of({{"upper", int_attr(upper)}}), dtype_name(dt) + " no k");
      ModelBuilder b;  // k read on the device
      b.outputs(b.node("Trilu", {b.input(x), b.input(scalar_int(-2))}, 1, attrs_of({{"upper", int_attr(upper)}})));
      expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Trilu runtime k " + dtype_name(dt));
    }
  }
}

// ------------------------------------------------------------------ refused cases
// supports() refuses these; the CPU fallback still gives the CPU result.
TEST(GpuTensor, RefusedCasesFallBackToCpu) {
  INGOT_REQUIRE_GPU();
  // ScatterND with a reduction.
  {
    ModelBuilder b;
    b.outputs(b.node("ScatterND",
                     {b.input(data_of(DType::kFloat32, {4, 3}, 200)), b.constant(ints({1, 1, 2}, {3, 1})),
                      b.input(data_of(DType::kFloat32, {3, 3}, 201))},
                     1, attrs_of({{"reduction", string_attr("add")}})));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 1e-6, 1e-6, "ScatterND reduction add");
  }
  // CumSum whose axis is only known at run time.
  {
    ModelBuilder b;
    b.outputs(b.node("CumSum", {b.input(data_of(DType::kFloat32, {4, 6}, 202)), b.input(scalar_int(1))}));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 1e-6, 1e-6, "CumSum runtime axis");
  }
  // Dropout asked for its mask.
  {
    ModelBuilder b;
    b.outputs(b.node("Dropout", {b.input(data_of(DType::kFloat32, {3, 5}, 203))}, 2));
    expect_cuda_matches_cpu(b.model(), b.feeds(), 0, 0, "Dropout with mask");
  }
  // A transpose of 9 dims that do not merge.
  check_node("Transpose", data_of(DType::kFloat32, {2, 3, 2, 3, 2, 3, 2, 3, 2}, 204), {}, 1, {}, "rank 9");
}

}  // namespace
}  // namespace ingot::testing
