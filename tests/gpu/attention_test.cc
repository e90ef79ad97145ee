// ingot.Attention on CUDA against the CPU kernel, through the Engine on one-node models (weights
// as initializers): every mask kind and broadcast shape, causal, fully masked rows with and
// without nan_to_zero (and finite filter values that keep the softmax defined), with and without
// W_out and biases, sequence lengths that are not multiples of the kernels' blocks, several head
// sizes (the tensor-core sizes and a generic one), batch sizes that select each query-block size,
// float32 (tight) and float16/bfloat16 (against the CPU on float32 copies of the same rounded
// values), query_rows (a few query positions, in launches of up to 16; one position over many
// rows, where the keys and values are absorbed), residuals of the output's
// shape or read at the query rows of the whole sequence, the QKV product and core in one kernel
// (which shapes it takes, and its cases), and a head size the CUDA kernel refuses (run on the
// CPU instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/attention_impl.h"
#include "gpu_test_util.h"

namespace ingot::testing {
namespace {

struct Case {
  int64_t B = 2, S = 7, E = 128, H = 2, M = 96;  // head size E / H
  std::string mask_kind = "none";                // none | add | bool
  Shape mask_shape;
  bool causal = false, nan_to_zero = false, out_proj = true, biases = true;
  float scale = 0.125f;
  float filter = -std::numeric_limits<float>::infinity();
  std::vector<int64_t> query_rows;  // the query_rows attribute (empty: absent)
  DType int_mask = DType::kUndefined;  // mask_kind bool: an integer mask of this dtype (0 / 3) instead of bool
  // Input 6: none, "output" (the output's shape) or "query" (the whole sequence [B, S, M],
  // read at the query rows: residual_rows "query").
  std::string residual = "none";
  bool layer_norm = false;  // inputs 7-8 and norm_epsilon: a LayerNorm of Y
  std::string what() const {
    return "B" + std::to_string(B) + " S" + std::to_string(S) + " E" + std::to_string(E) + " H" + std::to_string(H) +
           " mask " + mask_kind + " " + shape_str(mask_shape) + (causal ? " causal" : "") +
           (nan_to_zero ? " nan_to_zero" : "") + (out_proj ? " W_out" : "") + (biases ? " biases" : "") +
           (query_rows.empty() ? "" : " query_rows " + std::to_string(query_rows.size())) +
           (int_mask == DType::kUndefined ? "" : " mask " + dtype_name(int_mask)) +
           (residual == "none" ? "" : " residual " + residual) + (layer_norm ? " LayerNorm" : "");
  }
};

// Whether mask element `idx` (of a mask of shape `shape`) lets its query attend its key.
using MaskFill = std::function<bool(int64_t idx, const Shape& shape)>;

// Element-wise copy of a float tensor as float32.
Tensor as_f32(const Tensor& t) {
  Tensor r(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) r.data<float>()[i] = float(t.scalar_as_double(i));
  return r;
}

// One ingot.Attention node with X (and the mask) as graph inputs and weights as initializers,
// all of X's dtype.
Model attention_model(const Case& c, const std::map<std::string, Tensor>& w, DType dt, DType mask_dt) {
  Model m;
  m.path = "test:Attention";
  m.ir_version = 8;
  m.opsets[""] = 17;
  m.opsets["ingot"] = 1;
  Graph& g = m.graph;
  auto value = [&](const std::string& name, DType t) {
    ValueId id = g.intern(name);
    g.value(id).dtype = t;
    return id;
  };
  Node n;
  n.op_type = "Attention";
  n.domain = "ingot";
  n.name = "attn";
  ValueId x = value("X", dt);
  g.inputs.push_back(x);
  n.inputs = {x};
  for (const char* k : {"W_qkv", "b_qkv", "mask", "W_out", "b_out"}) {
    if (std::string(k) == "mask") {
      if (c.mask_kind == "none") {
        n.inputs.push_back(kNoValue);
        continue;
      }
      ValueId mv = value("mask", mask_dt);
      g.inputs.push_back(mv);
      n.inputs.push_back(mv);
      continue;
    }
    auto it = w.find(k);
    if (it == w.end()) {
      n.inputs.push_back(kNoValue);
      continue;
    }
    ValueId id = value(k, dt);
    g.initializers[id] = it->second;
    n.inputs.push_back(id);
  }
  while (n.inputs.back() == kNoValue) n.inputs.pop_back();
  if (c.residual != "none") {
    ValueId r = value("R", dt);
    g.inputs.push_back(r);
    n.inputs.resize(6, kNoValue);
    n.inputs.push_back(r);
    if (c.residual == "query") n.attrs.set("residual_rows", string_attr("query"));
  }
  if (c.layer_norm) {
    n.inputs.resize(7, kNoValue);
    for (const char* k : {"norm_gamma", "norm_beta"}) {
      ValueId id = value(k, dt);
      g.initializers[id] = w.at(k);
      n.inputs.push_back(id);
    }
    n.attrs.set("norm_epsilon", float_attr(1e-5f));
  }
  n.attrs.set("num_heads", int_attr(c.H));
  n.attrs.set("scale", float_attr(c.scale));
  n.attrs.set("causal", int_attr(c.causal));
  n.attrs.set("nan_to_zero", int_attr(c.nan_to_zero));
  n.attrs.set("mask_kind", string_attr(c.mask_kind));
  n.attrs.set("mask_filter_value", float_attr(c.filter));
  if (!c.query_rows.empty()) n.attrs.set("query_rows", ints_attr(c.query_rows));
  ValueId y = value("Y", dt);
  n.outputs = {y};
  g.outputs.push_back(y);
  g.nodes.push_back(std::move(n));
  return m;
}

// Runs case `c` in dtype `dt` on CUDA and compares with the CPU kernel run on float32 copies of
// the same (rounded) weights and inputs. Weights are scaled so queries, keys and scores are O(1).
// `keep(idx, shape)` fills a bool mask (true = attend) or, for mask_kind add, picks 0 (true) or
// -inf/`add_masked` (false), plus a small random offset on kept entries.
void run_case(const Case& c, DType dt, double atol, double rtol, const MaskFill& keep = nullptr,
              float add_masked = -std::numeric_limits<float>::infinity()) {
  SCOPED_TRACE(c.what() + " " + dtype_name(dt));
  const int64_t N = c.E;
  const double wq = 3.0 / std::sqrt(double(c.E)), wo = std::sqrt(3.0 / double(N));
  std::map<std::string, Tensor> w{{"W_qkv", random_of(dt, {c.E, 3 * N}, 1, -wq, wq)}};
  if (c.biases) w["b_qkv"] = random_of(dt, {3 * N}, 2, -0.5, 0.5);
  if (c.out_proj) {
    w["W_out"] = random_of(dt, {N, c.M}, 3, -wo, wo);
    if (c.biases) w["b_out"] = random_of(dt, {c.M}, 4, -0.5, 0.5);
  }
  if (c.layer_norm) {
    w["norm_gamma"] = random_of(dt, {c.M}, 8, 0.5, 1.5);
    w["norm_beta"] = random_of(dt, {c.M}, 9, -0.5, 0.5);
  }
  std::map<std::string, Tensor> feeds{{"X", random_of(dt, {c.B, c.S, c.E}, 5)}};
  if (c.residual != "none") {
    const int64_t rows = c.residual == "query" || c.query_rows.empty() ? c.S : int64_t(c.query_rows.size());
    feeds["R"] = random_of(dt, {c.B, rows, c.M}, 7);
  }
  const DType mask_dt = c.mask_kind != "bool" ? dt : c.int_mask == DType::kUndefined ? DType::kBool : c.int_mask;
  if (c.mask_kind != "none") {
    Tensor noise = random_of(DType::kFloat32, c.mask_shape, 6, -0.5, 0.5);
    Tensor mask(mask_dt, c.mask_shape);
    for (int64_t i = 0; i < mask.numel(); ++i) {
      const bool k = keep(i, c.mask_shape);
      const float v = k ? noise.data<float>()[i] : add_masked;
      switch (mask_dt) {
        case DType::kBool: mask.data<bool>()[i] = k; break;
        case DType::kInt64: mask.data<int64_t>()[i] = k ? 3 : 0; break;
        case DType::kInt32: mask.data<int32_t>()[i] = k ? 3 : 0; break;
        case DType::kFloat32: mask.data<float>()[i] = v; break;
        case DType::kFloat16: mask.data<float16>()[i] = float16(v); break;
        default: mask.data<bfloat16>()[i] = bfloat16(v); break;
      }
    }
    feeds["mask"] = mask;
  }

  std::map<std::string, Tensor> w32, feeds32;
  for (auto& [k, v] : w) w32[k] = as_f32(v);
  const bool float_mask = c.mask_kind == "add";
  for (auto& [k, v] : feeds) feeds32[k] = k == "mask" && !float_mask ? v : as_f32(v);
  auto ref = run_model_on(attention_model(c, w32, DType::kFloat32, float_mask ? DType::kFloat32 : mask_dt), feeds32, "cpu");
  auto got = run_model_on(attention_model(c, w, dt, mask_dt), feeds, "cuda");
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].dtype(), dt);
  expect_close(as_f32(got[0]), ref[0], atol, rtol, "Attention");
}

void run_f32(const Case& c, const MaskFill& keep = nullptr) { run_case(c, DType::kFloat32, 1e-4, 1e-4, keep); }

// Index helpers over a mask of any rank broadcast to [B, H, S, S]: the trailing two axes.
int64_t key_of(int64_t idx, const Shape& s) { return idx % s.back(); }
int64_t query_of(int64_t idx, const Shape& s) { return s.size() >= 2 ? idx / s.back() % s[s.size() - 2] : 0; }
int64_t batch_of(int64_t idx, const Shape& s) {
  int64_t inner = 1;
  for (size_t i = 1; i < s.size(); ++i) inner *= s[i];
  return s.size() == 4 ? idx / inner : 0;
}

// Padding: batch b keeps its first S - 3b - 1 keys (at least one); plus a scattered pattern over
// (query, key) that spares key 0, so no row is fully masked.
bool padding(int64_t idx, const Shape& s) {
  const int64_t S = s.back(), key = key_of(idx, s);
  return key < std::max<int64_t>(1, S - 3 * batch_of(idx, s) - 1) && (key == 0 || (query_of(idx, s) * 7 + key) % 5 != 3);
}

TEST(CudaAttention, Float32MaskShapesAndKinds) {
  INGOT_REQUIRE_GPU();
  for (const std::string kind : {"add", "bool"}) {
    for (Shape shape : {Shape{3, 1, 1, 77}, Shape{3, 2, 1, 77}, Shape{3, 1, 77, 77}, Shape{1, 1, 77, 77}, Shape{77, 77},
                          Shape{3, 2, 77, 77}}) {
      Case c;
      c.B = 3, c.S = 77, c.mask_kind = kind, c.mask_shape = shape;
      run_f32(c, padding);
    }
  }
  Case c;
  c.B = 3, c.S = 77;
  run_f32(c);
}

TEST(CudaAttention, Float32CausalWithoutOutputProjectionOrBiases) {
  INGOT_REQUIRE_GPU();
  Case c;
  c.B = 1, c.S = 130, c.E = 96, c.H = 3, c.causal = true, c.out_proj = false, c.biases = false;
  run_f32(c);
  c.mask_kind = "add", c.mask_shape = {1, 1, 1, 130}, c.out_proj = true;
  run_f32(c, padding);
}

// Query 2 of batch 1 sees no key; with -inf that row's softmax is undefined (NaN, or 0 with
// nan_to_zero); a finite filter keeps it a plain softmax over the filtered scores.
bool one_empty_row(int64_t idx, const Shape& s) {
  if (batch_of(idx, s) == 1 && query_of(idx, s) == 2) return false;
  return idx % 3 != 1;
}

TEST(CudaAttention, Float32FullyMaskedRows) {
  INGOT_REQUIRE_GPU();
  for (bool nan_to_zero : {true, false}) {
    for (bool out_proj : {true, false}) {
      Case c;
      c.B = 3, c.S = 9, c.mask_kind = "bool", c.mask_shape = {3, 1, 9, 9};
      c.nan_to_zero = nan_to_zero, c.out_proj = out_proj;
      run_f32(c, one_empty_row);
      c.mask_kind = "add";
      run_f32(c, one_empty_row);
      c.mask_kind = "bool", c.filter = -3.4e38f;
      run_f32(c, one_empty_row);
    }
  }
  // Causal with every key masked for the first queries of batch 0.
  Case c;
  c.B = 3, c.S = 70, c.causal = true, c.nan_to_zero = true, c.mask_kind = "bool", c.mask_shape = {3, 1, 1, 70};
  run_f32(c, [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 0 || key_of(idx, s) >= 4; });
}

// Float32 with head sizes the tensor-core kernel has no instance for (the generic kernel).
TEST(CudaAttention, Float32OddHeadSize) {
  INGOT_REQUIRE_GPU();
  Case c;
  c.B = 3, c.S = 33, c.E = 120, c.H = 3, c.mask_kind = "add", c.mask_shape = {3, 1, 1, 33};
  run_f32(c, padding);
  c.causal = true;
  run_f32(c, padding);
}

constexpr double kHalfTol = 1e-2, kBf16Tol = 4e-2;

// Every tensor-core head size, sequence lengths around the 16/64 blocks, batch 1 and 3.
TEST(CudaAttention, HalfPrecisionHeadSizesAndLengths) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (int64_t D : {64, 32, 80, 96, 128}) {
      for (int64_t S : {7, 77, 130}) {
        for (int64_t B : {1, 3}) {
          Case c;
          c.B = B, c.S = S, c.H = 2, c.E = 2 * D, c.M = 48;
          c.mask_kind = "add", c.mask_shape = {B, 1, 1, S};
          c.scale = float(1.0 / std::sqrt(double(D)));
          run_case(c, dt, tol, tol, padding);
        }
      }
    }
  }
}

TEST(CudaAttention, HalfPrecisionMasksAndCausal) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (const std::string kind : {"add", "bool"}) {
      for (Shape shape : {Shape{3, 1, 1, 77}, Shape{3, 2, 1, 77}, Shape{3, 1, 77, 77}, Shape{1, 1, 77, 77}, Shape{77, 77},
                          Shape{3, 2, 77, 77}}) {
        Case c;
        c.B = 3, c.S = 77, c.mask_kind = kind, c.mask_shape = shape;
        run_case(c, dt, tol, tol, padding);
      }
    }
    Case c;
    c.B = 3, c.S = 130, c.causal = true, c.out_proj = false, c.biases = false;
    run_case(c, dt, tol, tol);
    c.B = 1, c.S = 77, c.mask_kind = "bool", c.mask_shape = {1, 1, 1, 77}, c.out_proj = true, c.biases = true;
    run_case(c, dt, tol, tol, padding);
    // No mask, no W_out: the context is the output.
    Case d;
    d.B = 3, d.S = 65, d.out_proj = false;
    run_case(d, dt, tol, tol);
  }
}

TEST(CudaAttention, HalfPrecisionFullyMaskedRows) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (bool nan_to_zero : {true, false}) {
      Case c;
      c.B = 3, c.S = 9, c.mask_kind = "bool", c.mask_shape = {3, 1, 9, 9}, c.nan_to_zero = nan_to_zero;
      run_case(c, dt, tol, tol, one_empty_row);
      c.mask_kind = "add";
      run_case(c, dt, tol, tol, one_empty_row);
      run_case(c, dt, tol, tol, one_empty_row, -65504.f);  // finite: softmax stays defined
      c.mask_kind = "bool", c.filter = -65504.f;
      run_case(c, dt, tol, tol, one_empty_row);
    }
    Case c;  // causal: the first queries of batch 0 see no key
    c.B = 3, c.S = 70, c.causal = true, c.nan_to_zero = true, c.mask_kind = "bool", c.mask_shape = {3, 1, 1, 70};
    run_case(c, dt, tol, tol, [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 0 || key_of(idx, s) >= 4; });
  }
}

// A NaN score makes its whole row NaN (0 with nan_to_zero) on both of the flash kernel's mask
// paths: a key mask staged in shared memory ([B, 1, 1, S]) and a mask read per score.
TEST(CudaAttention, HalfPrecisionNaNScores) {
  INGOT_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Batch 1's key 5 is NaN for queries 0, 7, 14, ... (for every query under a key mask).
  auto nan_at = [](int64_t idx, const Shape& s) {
    return !(batch_of(idx, s) == 1 && key_of(idx, s) == 5 && query_of(idx, s) % 7 == 0);
  };
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (bool nan_to_zero : {false, true}) {
      for (int64_t S : {70, 4100}) {  // 4100: past the longest key mask staged in shared memory
        for (Shape shape : {Shape{3, 1, 1, S}, Shape{3, 1, S, S}}) {
          if (S > 100 && shape[2] != 1) continue;
          Case c;
          c.B = 3, c.S = S, c.mask_kind = "add", c.mask_shape = shape, c.nan_to_zero = nan_to_zero;
          if (S > 100) c.E = 64, c.H = 1, c.M = 32;
          run_case(c, dt, tol, tol, nan_at, nan);
        }
      }
    }
  }
  // Four query warps per CTA (12 heads of 64 at batch 8).
  Case c;
  c.B = 8, c.S = 128, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {8, 1, 1, 128};
  run_case(c, DType::kFloat16, kHalfTol, kHalfTol, nan_at, nan);
}

// DistilBERT-like shapes (12 heads of 64) at batches that give the flash kernel query blocks of
// 16, 32 and 64 rows (one, two and four warps per CTA on a 132-SM H100); at batch 1 the keys are
// also split over two warps per query block (merged at the end), as in every case above with
// few (batch, head) pairs and more than one key tile (S 77, 130, 70 at batch 1 or 3, 2 heads).
TEST(CudaAttention, HalfPrecisionQueryBlockSizes) {
  INGOT_REQUIRE_GPU();
  for (int64_t B : {1, 4, 8}) {
    Case c;
    c.B = B, c.S = 128, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128};
    run_case(c, DType::kFloat16, kHalfTol, kHalfTol, padding);
    c.S = 130, c.mask_kind = "none", c.causal = true, c.out_proj = false;
    run_case(c, DType::kBFloat16, kBf16Tol, kBf16Tol);
  }
}

// With few (batch, head) pairs and head size 64 over 64 or 128 keys, the query blocks of a head
// share its K and V: CTAs of one 16-row block each, in clusters of eight, each copying an eighth
// of the key rows into the shared memory of all eight (multicast). Batches after the first read
// rows past the first sequence; key masks, none with causal, bool masks.
TEST(CudaAttention, HalfPrecisionMulticastKeysAndValues) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (auto [B, H] : {std::pair<int64_t, int64_t>{1, 12}, {2, 4}, {16, 1}}) {
      Case c;
      c.B = B, c.S = 128, c.H = H, c.E = 64 * H, c.M = 64 * H;
      c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128};
      run_case(c, dt, tol, tol, padding);
      c.mask_kind = "none", c.mask_shape = {}, c.causal = true;
      run_case(c, dt, tol, tol);
      c.causal = false, c.mask_kind = "bool", c.mask_shape = {B, 1, 1, 128};
      run_case(c, dt, tol, tol, padding);
    }
  }
}

// At batch 24 (288 heads, at most two key tiles) each CTA computes two query blocks of 64 rows
// over K/V tiles it loads once (key masks and no mask): full and partial second blocks, causal;
// a per-score mask at the same shapes keeps one block per CTA. The wgmma kernel (next test),
// which takes the key-mask shapes on an H100, is switched off.
TEST(CudaAttention, HalfPrecisionTwoQueryBlocksPerCta) {
  INGOT_REQUIRE_GPU();
  const ScopedEnv no_wgmma("INGOT_CUDA_FLASH_WGMMA", "0"), unfused("INGOT_CUDA_QKV_ATTENTION", "0");
  const int64_t B = 24;
  for (int64_t S : {128, 100, 70}) {
    Case c;
    c.B = B, c.S = S, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {B, 1, 1, S};
    run_case(c, DType::kFloat16, kHalfTol, kHalfTol, padding);
    c.mask_kind = "bool", c.mask_shape = {B, 1, S, S};
    run_case(c, DType::kBFloat16, kBf16Tol, kBf16Tol, padding);
    c.mask_kind = "none", c.causal = true, c.out_proj = false;
    run_case(c, DType::kFloat16, kHalfTol, kHalfTol);
  }
}

// Many heads of 64 over 64 to 256 keys (S a multiple of 64) with a key mask or none: on compute
// capability 9.0, the wgmma kernel (a warpgroup per 64 query rows, the key tiles of a head
// multicast to its cluster of query blocks), and at S 128 the QKV product and core in one kernel
// (attention_projected.cu). Padding that leaves one key (S 64, late batches), keys only in the
// last tiles (the first tiles' rows all -inf), bool masks, int64 masks by head, a batch with
// every key masked (NaN rows, or 0 with nan_to_zero), a NaN mask value; at S 128 the same cases
// on the wgmma core alone and with both kernels switched off.
TEST(CudaAttention, HalfPrecisionWgmmaCore) {
  INGOT_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto late_keys = [](int64_t idx, const Shape& s) { return key_of(idx, s) >= s.back() / 2 + 3; };
  auto batch_2_masked = [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 2 && padding(idx, s); };
  auto nan_at = [](int64_t idx, const Shape& s) { return !(batch_of(idx, s) == 1 && key_of(idx, s) == 5); };
  struct Mode {
    const char *name, *qkv, *wgmma;
  };
  for (const Mode mode : {Mode{"projected", "1", "1"}, Mode{"wgmma core", "0", "1"}, Mode{"mma.sync core", "0", "0"}}) {
    const ScopedEnv qkv("INGOT_CUDA_QKV_ATTENTION", mode.qkv), wgmma("INGOT_CUDA_FLASH_WGMMA", mode.wgmma);
    for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
      const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
      for (int64_t S : {64, 128, 192, 256}) {
        if (std::string(mode.name) != "wgmma core" && S != 128) continue;
        Case c;
        c.B = 24, c.S = S, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {24, 1, 1, S};
        SCOPED_TRACE(mode.name);
        run_case(c, dt, tol, tol, padding);
        run_case(c, dt, tol, tol, late_keys);
        c.mask_kind = "bool";
        run_case(c, dt, tol, tol, padding);
        c.int_mask = DType::kInt64, c.mask_shape = {24, 12, 1, S}, c.out_proj = false;  // by head too
        run_case(c, dt, tol, tol, padding);
        c.int_mask = DType::kUndefined, c.mask_kind = "none", c.mask_shape = {}, c.biases = false;
        run_case(c, dt, tol, tol);
        if (S != 128) continue;
        c.mask_kind = "add", c.mask_shape = {24, 1, 1, S}, c.out_proj = true, c.biases = true;
        for (bool nan_to_zero : {false, true}) {
          c.nan_to_zero = nan_to_zero;
          run_case(c, dt, tol, tol, batch_2_masked);
          run_case(c, dt, tol, tol, nan_at, nan);
        }
      }
    }
  }
}

// Which shapes take the QKV product and core in one kernel (host arithmetic, runs without a GPU).
TEST(ProjectedAttentionFits, SequencesOf128HeadsOf64FillingTheGpu) {
  cuda::ProjectedAttentionArgs a;
  a.dtype = DType::kFloat16, a.B = 32, a.S = 128, a.E = 768, a.H = 12, a.D = 64;
  a.sm_count = 132, a.cc_major = 9, a.cc_minor = 0;
  EXPECT_TRUE(cuda::projected_attention_fits(a));  // BERT-base b32: 384 (batch, head) pairs
  auto with = [&](auto change) {
    cuda::ProjectedAttentionArgs b = a;
    change(b);
    return cuda::projected_attention_fits(b);
  };
  EXPECT_TRUE(with([](auto& b) { b.dtype = DType::kBFloat16; }));
  EXPECT_TRUE(with([](auto& b) { b.B = 11; }));  // 132 pairs
  EXPECT_FALSE(with([](auto& b) { b.B = 10; }));  // SMs idle
  EXPECT_FALSE(with([](auto& b) { b.dtype = DType::kFloat32; }));
  EXPECT_FALSE(with([](auto& b) { b.S = 64; }));
  EXPECT_FALSE(with([](auto& b) { b.S = 256; }));
  EXPECT_FALSE(with([](auto& b) { b.D = 128; }));
  EXPECT_FALSE(with([](auto& b) { b.E = 100; }));  // rows of X not 16-byte multiples
  EXPECT_FALSE(with([](auto& b) { b.mask.q = 128; }));  // a mask per query
  EXPECT_FALSE(with([](auto& b) { b.mask.causal = true; }));
  EXPECT_FALSE(with([](auto& b) { b.cc_major = 8, b.cc_minor = 9; }));
  EXPECT_FALSE(with([](auto& b) { b.cc_major = 10; }));
}

// The QKV product and core in one kernel (on compute capability 9.0): CTAs of one, two and three
// (batch, head) tiles (the copy pipeline running on across tiles), a depth of four K steps (as
// many as the pipeline's stages), no biases, masks by head, a fully masked batch, a NaN mask
// value, bfloat16.
TEST(CudaAttention, HalfPrecisionProjectedCore) {
  INGOT_REQUIRE_GPU();
  const ScopedEnv qkv("INGOT_CUDA_QKV_ATTENTION", "1");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto batch_2_masked = [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 2 && padding(idx, s); };
  auto nan_at = [](int64_t idx, const Shape& s) { return !(batch_of(idx, s) == 1 && key_of(idx, s) == 5); };
  for (auto [B, H] : {std::pair<int64_t, int64_t>{11, 12}, {12, 12}, {32, 12}, {40, 4}}) {
    for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
      const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
      Case c;
      c.B = B, c.S = 128, c.H = H, c.E = 64 * H, c.M = 96, c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128};
      run_case(c, dt, tol, tol, padding);
      c.biases = false, c.mask_kind = "bool", c.int_mask = DType::kInt64, c.mask_shape = {B, H, 1, 128};
      run_case(c, dt, tol, tol, padding);
      c.biases = true, c.int_mask = DType::kUndefined, c.mask_kind = "none", c.mask_shape = {}, c.out_proj = false;
      run_case(c, dt, tol, tol);
      c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128}, c.out_proj = true, c.nan_to_zero = true;
      run_case(c, dt, tol, tol, batch_2_masked);
      c.nan_to_zero = false;
      run_case(c, dt, tol, tol, nan_at, nan);
    }
  }
}

// Head sizes outside the tensor-core set run on the generic kernel in every dtype.
TEST(CudaAttention, HalfPrecisionOddHeadSize) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    Case c;
    c.B = 3, c.S = 33, c.E = 120, c.H = 3, c.mask_kind = "bool", c.mask_shape = {3, 1, 33, 33}, c.causal = true;
    run_case(c, dt, tol, tol, padding);
  }
}

// query_rows: a classifier's one token (batch 32 and batch 1, 12 heads: the single-query kernel
// in float16/bfloat16) and 22 positions (two launches of up to 16) in any order with repeats and
// negative indices, under key masks (the flash kernel's query-rows instantiation), per-score
// masks (the generic kernel) and causal, in every dtype.
TEST(CudaAttention, QueryRows) {
  INGOT_REQUIRE_GPU();
  std::vector<int64_t> many;
  for (int64_t i = 0; i < 20; ++i) many.push_back((i * 37) % 130 - (i % 3 == 0 ? 130 : 0));
  many.push_back(5), many.push_back(5);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat32 ? 1e-4 : dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (int64_t B : {32, 1}) {
      Case c;
      c.B = B, c.S = 128, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128};
      c.query_rows = {0};
      run_case(c, dt, tol, tol, padding);
      c.query_rows = {-3}, c.biases = false;  // B·S = 4096: the keys absorbed in float16/bfloat16
      run_case(c, dt, tol, tol, padding);
    }
    Case d;
    d.B = 3, d.S = 130, d.E = 128, d.H = 2, d.M = 96, d.query_rows = many;
    d.mask_kind = "bool", d.mask_shape = {3, 1, 1, 130};
    run_case(d, dt, tol, tol, padding);
    d.mask_shape = {3, 1, 130, 130};
    run_case(d, dt, tol, tol, padding);
    d.mask_kind = "add", d.mask_shape = {3, 1, 1, 130}, d.causal = true;
    run_case(d, dt, tol, tol, padding);
    d.mask_kind = "none", d.out_proj = false;
    run_case(d, dt, tol, tol);
  }
}

// The LayerNorm of Y in the out-projection (inputs 7-8): BERT-base's b32 attention with its
// residual, which ingot's fused product + LayerNorm kernel takes on a 132-SM Hopper, and shapes
// the LayerNorm follows as a pass of its own (float32, few rows, no residual, query rows).
TEST(CudaAttention, LayerNormOfTheOutput) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    const double tol = dt == DType::kFloat32 ? 1e-4 : dt == DType::kFloat16 ? 2 * kHalfTol : 2 * kBf16Tol;
    Case c;
    c.B = 32, c.S = 128, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {32, 1, 1, 128};
    c.scale = 0.125f, c.residual = "output", c.layer_norm = true;
    run_case(c, dt, tol, tol, padding);
    Case d;
    d.B = 2, d.S = 9, d.E = 128, d.H = 2, d.M = 96, d.layer_norm = true;
    run_case(d, dt, tol, tol);
    d.residual = "output";
    run_case(d, dt, tol, tol);
  }
}

// One query position per (batch, head) over at most 128 keys: the single-query kernel, head
// sizes 32, 64 and 128, S short of and at 128, the position first, last or inside (causal then
// hides the keys after it), key masks of every kind with padding, a batch whose only key is
// masked (NaN, or 0 with nan_to_zero; a finite filter keeps the softmax defined), a NaN score,
// no mask. S = 129 takes the flash kernel again.
TEST(CudaAttention, SingleQueryRow) {
  INGOT_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (auto [E, H] : {std::pair<int64_t, int64_t>{96, 3}, {128, 2}, {256, 2}}) {
      for (int64_t S : {37, 128, 129}) {
        for (int64_t pos : {int64_t(0), S - 1, int64_t(9)}) {
          Case c;
          c.B = 3, c.S = S, c.E = E, c.H = H, c.M = 64, c.query_rows = {pos};
          c.mask_kind = "bool", c.mask_shape = {3, 1, 1, S};
          run_case(c, dt, tol, tol, padding);
          c.causal = true, c.mask_kind = "add";
          run_case(c, dt, tol, tol, padding);
          c.causal = false, c.mask_kind = "none";
          run_case(c, dt, tol, tol);
        }
      }
    }
    // Batch 1 keeps no key but key 0, which is masked too: an undefined row.
    auto none_in_batch1 = [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 1 && key_of(idx, s) % 4 != 2; };
    for (bool nan_to_zero : {false, true}) {
      Case c;
      c.B = 3, c.S = 50, c.query_rows = {3}, c.mask_kind = "bool", c.mask_shape = {3, 1, 1, 50};
      c.nan_to_zero = nan_to_zero;
      run_case(c, dt, tol, tol, none_in_batch1);
      c.mask_kind = "add";
      run_case(c, dt, tol, tol, none_in_batch1);
      run_case(c, dt, tol, tol, none_in_batch1, -65504.f);
      c.mask_kind = "bool", c.int_mask = DType::kInt64, c.filter = -65504.f;
      run_case(c, dt, tol, tol, none_in_batch1);
      c.mask_kind = "add", c.int_mask = DType::kUndefined;  // batch 1's key 5 NaN: that row NaN (or 0)
      c.filter = -std::numeric_limits<float>::infinity();
      run_case(c, dt, tol, tol, [](int64_t idx, const Shape& s) { return !(batch_of(idx, s) == 1 && key_of(idx, s) == 5); },
               nan);
    }
  }
}

// One query position over at least 2048 rows in float16/bfloat16: the keys and values absorbed
// (attention_impl.h, AbsorbedQueryArgs; no K or V for the S positions). Every hidden size its
// kernel takes (E / 128 = 2, 3, 4, 6, 8), head sizes 32 to 128, S not a multiple of its 32-key
// tiles and up to 500, the position first, last or inside (causal hides the keys after it),
// masks of every kind and of the key, query and head axes, without biases, and batches whose
// every key is masked (NaN, or 0 with nan_to_zero). E = 128 keeps the flash path.
TEST(CudaAttention, AbsorbedSingleQuery) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    struct Size {
      int64_t B, S, E, H;
    };
    for (const Size& z : {Size{16, 128, 256, 4}, Size{24, 100, 384, 6}, Size{5, 500, 512, 8}, Size{16, 128, 1024, 16},
                          Size{16, 128, 256, 8}, Size{32, 70, 384, 3}, Size{16, 128, 128, 2}}) {
      for (int64_t pos : {int64_t(0), int64_t(-1), int64_t(9)}) {
        Case c;
        c.B = z.B, c.S = z.S, c.E = z.E, c.H = z.H, c.M = 64, c.query_rows = {pos};
        c.mask_kind = "add", c.mask_shape = {z.B, 1, 1, z.S};
        run_case(c, dt, tol, tol, padding);
        c.mask_kind = "bool", c.int_mask = DType::kInt64, c.causal = true, c.biases = false;
        run_case(c, dt, tol, tol, padding);
        c.mask_kind = "none", c.int_mask = DType::kUndefined, c.causal = false, c.out_proj = false;
        run_case(c, dt, tol, tol);
      }
    }
    Case c;
    c.B = 16, c.S = 128, c.E = 256, c.H = 4, c.M = 64, c.query_rows = {3};
    c.mask_kind = "bool", c.mask_shape = {16, 1, 128, 128};  // per (query, key): read at the query's row
    run_case(c, dt, tol, tol, padding);
    c.mask_kind = "add", c.mask_shape = {16, 4, 1, 128};  // per head
    run_case(c, dt, tol, tol, [](int64_t idx, const Shape& s) { return padding(idx, s) && (idx / s.back()) % 4 != key_of(idx, s) % 4; });
    // Batch 1 keeps no key: an undefined row.
    auto none_in_batch1 = [](int64_t idx, const Shape& s) { return batch_of(idx, s) != 1 && key_of(idx, s) % 4 != 2; };
    c.mask_shape = {16, 1, 1, 128};
    for (bool nan_to_zero : {false, true}) {
      c.nan_to_zero = nan_to_zero;
      c.mask_kind = "bool";
      run_case(c, dt, tol, tol, none_in_batch1);
      c.mask_kind = "add";
      run_case(c, dt, tol, tol, none_in_batch1);
      run_case(c, dt, tol, tol, none_in_batch1, -65504.f);
    }
  }
}

// A residual (input 6) added in the output projection's epilogue: of the output's shape, and
// with residual_rows "query" the whole sequence read at the query rows (one row: a C with the
// sequence's row pitch; several: one product per position), every float dtype.
TEST(CudaAttention, Residuals) {
  INGOT_REQUIRE_GPU();
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat32 ? 1e-4 : dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
    for (const char* residual : {"output", "query"}) {
      for (int64_t B : {1, 32}) {
        Case c;
        c.B = B, c.S = 128, c.E = 768, c.H = 12, c.M = 768, c.mask_kind = "add", c.mask_shape = {B, 1, 1, 128};
        c.query_rows = {0}, c.residual = residual;
        run_case(c, dt, tol, tol, padding);
      }
      Case d;
      d.B = 3, d.S = 130, d.E = 128, d.H = 2, d.M = 96, d.query_rows = {5, -1, 0}, d.residual = residual;
      run_case(d, dt, tol, tol);
    }
    Case all;  // no query_rows: "query" reads every row, as "output" does
    all.residual = "query";
    run_case(all, dt, tol, tol);
  }
}

// Integer masks under mask_kind bool (simplify_attention_mask hands the op attention_mask itself):
// nonzero attends, as the Cast to bool it replaces; int64 and int32, key masks (staged) and
// per-score masks, both flash paths and the generic kernel (float32).
TEST(CudaAttention, IntegerBoolMasks) {
  INGOT_REQUIRE_GPU();
  for (DType mt : {DType::kInt64, DType::kInt32}) {
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const double tol = dt == DType::kFloat32 ? 1e-4 : dt == DType::kFloat16 ? kHalfTol : kBf16Tol;
      Case c;
      c.B = 3, c.S = 70, c.mask_kind = "bool", c.mask_shape = {3, 1, 1, 70}, c.int_mask = mt;
      run_case(c, dt, tol, tol, padding);
      c.mask_shape = {3, 1, 70, 70};
      run_case(c, dt, tol, tol, padding);
    }
  }
}

// Head size 160 is refused by the CUDA kernel (supports()); the node runs on the CPU and the
// engine's result is still right.
TEST(CudaAttention, UnsupportedHeadSizeFallsBackToCpu) {
  INGOT_REQUIRE_GPU();
  Case c;
  c.B = 2, c.S = 20, c.E = 160, c.H = 1, c.mask_kind = "add", c.mask_shape = {2, 1, 1, 20};
  run_f32(c, padding);
}

}  // namespace
}  // namespace ingot::testing
