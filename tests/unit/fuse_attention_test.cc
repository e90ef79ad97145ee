// fuse_attention and the ingot.Attention kernel: every transformer fixture fuses one Attention
// per layer with no Softmax left (outputs vs PyTorch are checked by ModelFixture); the kernel
// matches a naive reference with padding masks (additive and boolean), causal masking, fully
// masked rows and several query blocks; bad inputs give clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>

#include "io/npy.h"
#include "passes/fuse_attention.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace ingot;

namespace {

// Every transformer fixture of both exporters, optimized with the options `options_for` gives for
// the fixture's inputs: one Attention per layer, no Softmax left, outputs as PyTorch's.
using FixtureOptions = std::function<EngineOptions(const std::map<std::string, Tensor>& inputs)>;
void expect_fixtures_fused(const FixtureOptions& options_for, const std::string& what) {
  for (const char* model : {"bert", "distilbert", "roberta", "gpt2"}) {
    for (const char* ex : {"torchscript", "dynamo"}) {
      fs::path dir = fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / model;
      auto inputs = read_npz((dir / "inputs.npz").string());
      auto reference = read_npz((dir / "reference.npz").string());
      ASSERT_TRUE(inputs && reference);
      auto engine = Engine::from_onnx((dir / (std::string("model.") + ex + ".onnx")).string(), options_for(*inputs));
      ASSERT_TRUE(engine.has_value()) << model << "/" << ex << " " << what << ": " << engine.status().message();
      int attention = 0, softmax = 0;
      for (const Node& n : (*engine)->model().graph.nodes) {
        attention += n.op_type == "Attention" && n.domain == "ingot";
        softmax += n.op_type == "Softmax";
      }
      // Every fixture has 2 layers (num_hidden_layers / n_layer in meta.json).
      EXPECT_EQ(attention, 2) << model << "/" << ex << " " << what;
      EXPECT_EQ(softmax, 0) << model << "/" << ex << " " << what;
      // The pass says what it did per Softmax (ingot build --verbose prints these notes).
      int fused_notes = 0;
      for (const PassReport& r : (*engine)->pass_reports())
        if (r.name == "fuse_attention")
          for (const std::string& n : r.notes) fused_notes += n.find("fused into") != std::string::npos;
      EXPECT_EQ(fused_notes, 2) << model << "/" << ex << " " << what;
      auto outs = (*engine)->create_context()->run(*inputs);
      ASSERT_TRUE(outs.has_value()) << outs.status().message();
      for (const auto& o : *outs) {
        const Tensor& want = reference->at(o.name);
        double err = 0;
        for (int64_t i = 0; i < want.numel(); ++i)
          err = std::max(err, std::fabs(o.tensor.scalar_as_double(i) - want.scalar_as_double(i)));
        EXPECT_LE(err, 1e-4) << model << "/" << ex << " " << what;
      }
    }
  }
}

TEST(FuseAttention, TransformerFixtures) {
  expect_fixtures_fused([](const auto&) { return EngineOptions{}; }, "without a profile");
}

// A profile that fixes the sequence length (16, the fixtures') and lets only the batch vary, with
// batch 1 at opt: folding specialises the graph to 16 positions (TorchScript's position-embedding
// slice becomes a 16-row constant), so the distinct-size probe must keep 16 for the sequence
// rather than try another size the folded graph cannot take.
TEST(FuseAttention, TransformerFixturesWithFixedSequenceProfile) {
  expect_fixtures_fused(
      [](const std::map<std::string, Tensor>& inputs) {
        EngineOptions opts;
        Profile p;
        for (const auto& [name, t] : inputs) {
          EXPECT_EQ(t.shape(), (Shape{2, 16})) << name;
          p.min[name] = {1, 16}, p.opt[name] = {1, 16}, p.max[name] = {4, 16};
        }
        opts.profiles.push_back(p);
        return opts;
      },
      "with profile 1x16..4x16");
}

// --- the kernel against a naive reference -------------------------------------------------

struct Case {
  int64_t B = 2, S = 5, E = 12, H = 3, M = 12;
  std::string mask_kind = "none";  // none | add | bool
  Shape mask_shape;
  bool causal = false, nan_to_zero = false, out_proj = true;
  float scale = 0.5f;
  std::string precision = "fp32";  // bf16: projections in bfloat16 (tolerance below)
  std::vector<int64_t> query_rows;  // the query_rows attribute (empty: absent, every row)
};

Tensor random(Shape s, std::mt19937& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::kFloat32, std::move(s));
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

ValueId add_value(Graph& g, const std::string& name, DType t, const Shape& s) {
  ValueId id = g.intern(name);
  g.value(id).dtype = t;
  SymShape ss;
  for (int64_t d : s) ss.push_back(Dim{d, {}});
  g.value(id).shape = ss;
  return id;
}

// One ingot.Attention node; weights as initializers.
Model attention_model(const Case& c, const std::map<std::string, Tensor>& w, DType mask_dtype) {
  Model m;
  m.opsets[""] = 17;
  m.opsets["ingot"] = 1;
  Graph& g = m.graph;
  Node n;
  n.op_type = "Attention";
  n.domain = "ingot";
  n.name = "attn";
  ValueId x = add_value(g, "X", DType::kFloat32, {c.B, c.S, c.E});
  g.inputs.push_back(x);
  n.inputs = {x};
  for (const char* k : {"W_qkv", "b_qkv", "mask", "W_out", "b_out"}) {
    if (std::string(k) == "mask") {
      if (c.mask_kind == "none") { n.inputs.push_back(kNoValue); continue; }
      ValueId mv = add_value(g, "mask", mask_dtype, c.mask_shape);
      g.inputs.push_back(mv);
      n.inputs.push_back(mv);
      continue;
    }
    auto it = w.find(k);
    if (it == w.end()) { n.inputs.push_back(kNoValue); continue; }
    ValueId id = add_value(g, k, DType::kFloat32, it->second.shape());
    g.initializers[id] = it->second;
    n.inputs.push_back(id);
  }
  while (n.inputs.back() == kNoValue) n.inputs.pop_back();
  auto ai = [](int64_t v) { Attribute a; a.kind = Attribute::Kind::kInt; a.i = v; return a; };
  Attribute f, s;
  f.kind = Attribute::Kind::kFloat, f.f = c.scale;
  s.kind = Attribute::Kind::kString, s.s = c.mask_kind;
  n.attrs.set("num_heads", ai(c.H));
  n.attrs.set("scale", f);
  n.attrs.set("causal", ai(c.causal));
  n.attrs.set("nan_to_zero", ai(c.nan_to_zero));
  n.attrs.set("mask_kind", s);
  Attribute prec;
  prec.kind = Attribute::Kind::kString, prec.s = c.precision;
  n.attrs.set("precision", prec);
  if (!c.query_rows.empty()) {
    Attribute q;
    q.kind = Attribute::Kind::kInts, q.ints = c.query_rows;
    n.attrs.set("query_rows", q);
  }
  const int64_t rows = c.query_rows.empty() ? c.S : int64_t(c.query_rows.size());
  ValueId y = add_value(g, "Y", DType::kFloat32, {c.B, rows, c.out_proj ? c.M : c.E});
  n.outputs = {y};
  g.outputs.push_back(y);
  g.nodes.push_back(n);
  return m;
}

// Naive attention in double precision.
std::vector<double> reference(const Case& c, const Tensor& X, const std::map<std::string, Tensor>& w, const Tensor* mask) {
  const int64_t B = c.B, S = c.S, E = c.E, N = E, H = c.H, D = N / H;
  const float* x = X.data<float>();
  const float* wq = w.at("W_qkv").data<float>();
  const float* bq = w.at("b_qkv").data<float>();
  std::vector<double> qkv(size_t(B * S * 3 * N)), ctx(size_t(B * S * N));
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t j = 0; j < 3 * N; ++j) {
      double a = bq[j];
      for (int64_t e = 0; e < E; ++e) a += double(x[r * E + e]) * wq[e * 3 * N + j];
      qkv[size_t(r * 3 * N + j)] = a;
    }
  Shape ms = mask ? mask->shape() : Shape{};
  while (ms.size() < 4) ms.insert(ms.begin(), 1);
  auto mask_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    if (!mask) return 0;
    int64_t idx[4] = {b, h, i, j}, off = 0;
    for (int k = 0; k < 4; ++k) off = off * ms[size_t(k)] + (ms[size_t(k)] == 1 ? 0 : idx[k]);
    if (c.mask_kind == "bool") return mask->data<bool>()[off] ? 0.0 : -INFINITY;
    return mask->data<float>()[off];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(static_cast<size_t>(S));
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double a = 0;
          for (int64_t d = 0; d < D; ++d)
            a += qkv[size_t((b * S + i) * 3 * N + h * D + d)] * qkv[size_t((b * S + j) * 3 * N + N + h * D + d)];
          s[size_t(j)] = a * c.scale + mask_at(b, h, i, j) + (c.causal && j > i ? -INFINITY : 0.0);
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = 0;
        for (auto& v : s) sum += (v = std::exp(v - mx));
        for (int64_t d = 0; d < D; ++d) {
          double a = 0;
          for (int64_t j = 0; j < S; ++j) a += s[size_t(j)] / sum * qkv[size_t((b * S + j) * 3 * N + 2 * N + h * D + d)];
          if (std::isnan(a) && c.nan_to_zero) a = 0;
          ctx[size_t((b * S + i) * N + h * D + d)] = a;
        }
      }
  if (!c.out_proj) return ctx;
  const float* wo = w.at("W_out").data<float>();
  const float* bo = w.at("b_out").data<float>();
  std::vector<double> y(static_cast<size_t>(B * S * c.M));
  for (int64_t r = 0; r < B * S; ++r)
    for (int64_t j = 0; j < c.M; ++j) {
      double a = bo[j];
      for (int64_t k = 0; k < N; ++k) a += ctx[size_t(r * N + k)] * wo[k * c.M + j];
      y[size_t(r * c.M + j)] = a;
    }
  return y;
}

void run_case(const Case& c, const std::function<void(Tensor&)>& fill_mask = nullptr) {
  std::mt19937 rng(42);
  std::map<std::string, Tensor> w{{"W_qkv", random({c.E, 3 * c.E}, rng)}, {"b_qkv", random({3 * c.E}, rng)}};
  if (c.out_proj) w["W_out"] = random({c.E, c.M}, rng), w["b_out"] = random({c.M}, rng);
  DType mt = c.mask_kind == "bool" ? DType::kBool : DType::kFloat32;
  EngineOptions opts;
  opts.optimize = false;
  auto engine = Engine::from_model(attention_model(c, w, mt), opts);
  ASSERT_TRUE(engine.has_value()) << engine.status().message();
  std::map<std::string, Tensor> in{{"X", random({c.B, c.S, c.E}, rng)}};
  Tensor mask;
  if (c.mask_kind != "none") {
    mask = Tensor(mt, c.mask_shape);
    fill_mask(mask);
    in["mask"] = mask;
  }
  auto outs = (*engine)->create_context()->run(in);
  ASSERT_TRUE(outs.has_value()) << outs.status().message();
  auto want = reference(c, in["X"], w, mask.defined() ? &mask : nullptr);
  if (!c.query_rows.empty()) {  // the reference's rows at the query positions, in their order
    const int64_t width = c.out_proj ? c.M : c.E;
    std::vector<double> picked;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t q : c.query_rows) {
        const int64_t pos = q < 0 ? q + c.S : q;
        picked.insert(picked.end(), want.begin() + (b * c.S + pos) * width, want.begin() + (b * c.S + pos + 1) * width);
      }
    want = std::move(picked);
  }
  const Tensor& got = (*outs)[0].tensor;
  ASSERT_EQ(got.numel(), int64_t(want.size()));
  double err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.data<float>()[i];
    if (std::isnan(want[i]) || std::isnan(g)) {
      EXPECT_EQ(std::isnan(want[i]), std::isnan(g)) << "element " << i;
      continue;
    }
    err = std::max(err, std::fabs(g - want[i]));
  }
  // bf16 keeps 8 bits of mantissa in X, the context and the weights of both projections: errors
  // grow like sqrt(K) * 2^-8 (as FusedMatMul's bf16 test allows).
  EXPECT_LE(err, c.precision == "bf16" ? 0.02 * std::sqrt(double(c.E)) : 1e-4) << c.precision;
}

// Padding: batch b keeps its first S - 2*b keys.
TEST(FuseAttention, KernelAdditivePaddingMask) {
  Case c;
  c.mask_kind = "add", c.mask_shape = {c.B, 1, 1, c.S};
  run_case(c, [&](Tensor& m) {
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j) m.data<float>()[b * c.S + j] = j < c.S - 2 * b ? 0.f : -INFINITY;
  });
}

TEST(FuseAttention, KernelBoolCausalAndPaddingMultiBlock) {
  Case c;
  c.S = 70;  // two query blocks of the kernel
  c.mask_kind = "bool", c.mask_shape = {c.B, 1, c.S, c.S};
  run_case(c, [&](Tensor& m) {
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t j = 0; j < c.S; ++j) m.data<bool>()[(b * c.S + i) * c.S + j] = j <= i && j < c.S - 9 * b;
  });
}

// precision bf16 (bf16 engines set it): both projections on oneDNN's bf16 path or, where
// bf16 products do not pay, in float32 with few-row products on bf16 weights; the packed
// weights reused over repeated runs of one engine.
TEST(FuseAttention, KernelBf16Projections) {
  // on: oneDNN's bf16 matmul whatever this CPU is; off: float32 products, the few-row ones on
  // bf16 weights (what Intel CPUs without AMX run).
  for (const char* mode : {"on", "off"}) {
    setenv("INGOT_CPU_BF16_PRODUCTS", mode, 1);
    Case c;
    // Scores of order 1 (a trained model's): with weights in [-1, 1] and the usual 1/sqrt(D)
    // they would be tens, and bf16's rounding of Q and K would move the softmax's winner.
    c.precision = "bf16", c.S = 33, c.E = 64, c.H = 4, c.M = 48, c.scale = 0.02f;
    c.mask_kind = "add", c.mask_shape = {c.B, 1, 1, c.S};
    run_case(c, [&](Tensor& m) {
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t j = 0; j < c.S; ++j) m.data<float>()[b * c.S + j] = j < c.S - 5 * b ? 0.f : -INFINITY;
    });
    c.out_proj = false;
    run_case(c, [&](Tensor& m) {
      for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = 0.f;
    });
    // 12 rows: the few-row products.
    c.B = 1, c.S = 12, c.out_proj = true, c.mask_shape = {1, 1, 1, c.S};
    run_case(c, [&](Tensor& m) {
      for (int64_t j = 0; j < c.S; ++j) m.data<float>()[j] = j < 10 ? 0.f : -INFINITY;
    });
  }
  unsetenv("INGOT_CPU_BF16_PRODUCTS");
}

TEST(FuseAttention, KernelCausalAttributeNoOutputProjection) {
  Case c;
  c.causal = true, c.out_proj = false, c.S = 9, c.B = 3;
  run_case(c);
}

TEST(FuseAttention, KernelFullyMaskedRows) {
  Case c;
  c.mask_kind = "bool", c.mask_shape = {c.B, 1, c.S, c.S};
  auto fill = [&](Tensor& m) {  // batch 1, query 2 sees no key
    for (int64_t i = 0; i < m.numel(); ++i) m.data<bool>()[i] = i != (1 * c.S + 2) * c.S + 0 && i % 3 != 1;
    for (int64_t j = 0; j < c.S; ++j) m.data<bool>()[(1 * c.S + 2) * c.S + j] = false;
  };
  c.nan_to_zero = true;
  run_case(c, fill);
  c.nan_to_zero = false;  // ONNX Softmax semantics: NaN
  run_case(c, fill);
}

// query_rows (gather_rows_early's classifier token): only those query positions, in the given
// order (repeats and negative indices allowed), against every key, with padding, causal and
// per-query masks; positions from both of the CPU kernel's 64-row query blocks.
TEST(FuseAttention, KernelQueryRows) {
  Case c;
  c.S = 70, c.query_rows = {0, -1, 65, 3, 0};
  c.mask_kind = "bool", c.mask_shape = {c.B, 1, c.S, c.S};
  run_case(c, [&](Tensor& m) {
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t i = 0; i < c.S; ++i)
        for (int64_t j = 0; j < c.S; ++j) m.data<bool>()[(b * c.S + i) * c.S + j] = j <= i + 2 && j < c.S - 9 * b;
  });
  Case d;
  d.causal = true, d.out_proj = false, d.S = 9, d.B = 3, d.query_rows = {4};
  d.mask_kind = "add", d.mask_shape = {d.B, 1, 1, d.S};
  run_case(d, [&](Tensor& m) {
    for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = i % 4 == 3 ? -INFINITY : 0.1f * float(i % 5);
  });
}

// mask_kind bool over an integer mask (attention_mask without its Cast to bool): nonzero attends,
// exactly as the bool mask.
TEST(FuseAttention, KernelIntegerBoolMask) {
  Case c;
  c.S = 9, c.mask_kind = "bool", c.mask_shape = {c.B, 1, 1, c.S};
  std::mt19937 rng(3);
  std::map<std::string, Tensor> w{{"W_qkv", random({c.E, 3 * c.E}, rng)}, {"b_qkv", random({3 * c.E}, rng)},
                                  {"W_out", random({c.E, c.M}, rng)}, {"b_out", random({c.M}, rng)}};
  const Tensor x = random({c.B, c.S, c.E}, rng);
  Tensor as_bool(DType::kBool, c.mask_shape), as_int(DType::kInt64, c.mask_shape);
  for (int64_t i = 0; i < as_bool.numel(); ++i) {
    as_bool.data<bool>()[i] = i % c.S < c.S - 3 * (i / c.S);
    as_int.data<int64_t>()[i] = as_bool.data<bool>()[i] ? -5 : 0;
  }
  EngineOptions opts;
  opts.optimize = false;
  std::vector<Tensor> outs;
  for (const Tensor& m : {as_bool, as_int}) {
    auto e = Engine::from_model(attention_model(c, w, m.dtype()), opts);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    auto r = (*e)->create_context()->run({{"X", x}, {"mask", m}});
    ASSERT_TRUE(r.has_value()) << r.status().message();
    outs.push_back((*r)[0].tensor);
  }
  ASSERT_EQ(outs[0].numel(), outs[1].numel());
  for (int64_t i = 0; i < outs[0].numel(); ++i) EXPECT_EQ(outs[0].data<float>()[i], outs[1].data<float>()[i]) << i;
}

TEST(FuseAttention, KernelRejectsBadInputs) {
  std::mt19937 rng(1);
  Case c;
  // W_qkv rows differ from X's hidden size.
  std::map<std::string, Tensor> w{{"W_qkv", random({c.E + 1, 3 * c.E}, rng)}};
  EngineOptions opts;
  opts.optimize = false;
  auto run = [&](const Model& m, std::map<std::string, Tensor> in) -> Status {
    auto e = Engine::from_model(m, opts);
    if (!e) return e.status();
    auto r = (*e)->create_context()->run(in);
    return r ? Status::ok() : r.status();
  };
  Status s = run(attention_model(c, w, DType::kFloat32), {{"X", random({c.B, c.S, c.E}, rng)}});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("W_qkv"), std::string::npos) << s.message();
  // A mask that does not broadcast to [B, H, S, S].
  w["W_qkv"] = random({c.E, 3 * c.E}, rng);
  c.mask_kind = "add", c.mask_shape = {c.B, 1, c.S, c.S + 1};
  s = run(attention_model(c, w, DType::kFloat32),
          {{"X", random({c.B, c.S, c.E}, rng)}, {"mask", Tensor(DType::kFloat32, c.mask_shape)}});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("does not broadcast"), std::string::npos) << s.message();
  // num_heads must divide the projection width.
  c.mask_kind = "none", c.H = 5;
  s = run(attention_model(c, w, DType::kFloat32), {{"X", random({c.B, c.S, c.E}, rng)}});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("num_heads"), std::string::npos) << s.message();
  // A query row past the sequence.
  c.H = 3, c.query_rows = {0, c.S};
  s = run(attention_model(c, w, DType::kFloat32), {{"X", random({c.B, c.S, c.E}, rng)}});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("query row 5"), std::string::npos) << s.message();
}

// Head sizes and key counts that fill whole vector tiles and leave tails (D = 64 and 40, 150
// keys over three query blocks), on the AVX-512 microkernels and the AVX2 ones.
TEST(FuseAttention, KernelTilesAndTailsBothIsas) {
  for (bool avx2 : {false, true}) {
    if (avx2) setenv("INGOT_ATTENTION_NO_AVX512", "1", 1);
    Case c;
    // No W_out: a 128-deep output projection alone would exceed the 1e-4 absolute tolerance in float.
    c.S = 150, c.E = 128, c.H = 2, c.out_proj = false, c.scale = 0.125f;
    c.mask_kind = "add", c.mask_shape = {c.B, 1, 1, c.S};
    run_case(c, [&](Tensor& m) {
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t j = 0; j < c.S; ++j) m.data<float>()[b * c.S + j] = j < c.S - 37 * b ? 0.25f * float(j % 3) : -INFINITY;
    });
    Case d;
    d.S = 70, d.E = 80, d.H = 2, d.B = 1, d.causal = true, d.out_proj = false, d.scale = 0.15f;
    run_case(d);
    if (avx2) unsetenv("INGOT_ATTENTION_NO_AVX512");
  }
}

}  // namespace
