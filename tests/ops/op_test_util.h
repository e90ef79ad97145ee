// Helpers for op tests: build a one-node graph, run it through the engine, compare results.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/engine.h"

namespace ingot::testing {

// A model with a single node: inputs named in0, in1, ...; outputs out0, out1, ...
inline Model single_node_model(const std::string& op_type, const std::vector<Tensor>& inputs, int num_outputs,
                               Attributes attrs = {}, int opset = 17, const std::string& domain = "") {
  Model m;
  m.path = "test:" + op_type;
  m.ir_version = 8;
  m.opsets[""] = opset;
  if (!domain.empty()) m.opsets[domain] = 1;
  Graph& g = m.graph;
  Node n;
  n.op_type = op_type;
  n.domain = domain;
  n.name = op_type + "_0";
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId id = g.intern("in" + std::to_string(i));
    g.value(id).dtype = inputs[i].dtype();
    g.inputs.push_back(id);
    n.inputs.push_back(id);
  }
  for (int i = 0; i < num_outputs; ++i) {
    ValueId id = g.intern("out" + std::to_string(i));
    g.outputs.push_back(id);
    n.outputs.push_back(id);
  }
  g.nodes.push_back(std::move(n));
  return m;
}

// Runs a single-node model; fails the test on error.
inline std::vector<Tensor> run_single_node(const std::string& op_type, const std::vector<Tensor>& inputs,
                                           int num_outputs, Attributes attrs = {}, int opset = 17) {
  auto e = Engine::from_model(single_node_model(op_type, inputs, num_outputs, std::move(attrs), opset));
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds["in" + std::to_string(i)] = inputs[i];
  auto out = (*e)->create_context()->run(feeds);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  std::vector<Tensor> r;
  if (out) for (auto& nt : *out) r.push_back(nt.tensor);
  return r;
}

// Builds and runs a single-node model: the error (from the build or the run), ok when it ran.
inline Status run_status(const std::string& op, const std::vector<Tensor>& inputs, int nout, Attributes attrs = {},
                         int opset = 17) {
  auto e = Engine::from_model(single_node_model(op, inputs, nout, std::move(attrs), opset));
  if (!e) return e.status();
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds["in" + std::to_string(i)] = inputs[i];
  auto out = (*e)->create_context()->run(feeds);
  return out ? Status::ok() : out.status();
}

// The same, as the error's message ("" when it ran).
inline std::string run_error(const std::string& op, const std::vector<Tensor>& inputs, int nout, Attributes attrs = {},
                             int opset = 17) {
  Status st = run_status(op, inputs, nout, std::move(attrs), opset);
  return st.is_ok() ? "" : st.message();
}

// Whether this CPU has AVX-512 (F and BW): what precision "bf16" engines need (the engine
// refuses them elsewhere with a clear error) and oneDNN 2.6's Winograd convolution uses. CI's
// and developers' VMs differ: some expose AVX-512, some only AVX2.
inline bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }

// A tensor of `shape` holding v (its size must be the shape's element count).
template <class T>
Tensor make(Shape shape, std::vector<T> v) {
  Tensor t(dtype_of<T>(), std::move(shape));
  EXPECT_EQ(size_t(t.numel()), v.size());
  for (size_t i = 0; i < v.size() && i < size_t(t.numel()); ++i) t.data<T>()[i] = v[i];
  return t;
}

// t's elements as a vector of T (t's dtype must be T's).
template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng);
  return t;
}

// A float32 copy of `t` with every value rounded to bfloat16 (to nearest even, as oneDNN's
// reorders round): the weights a bf16 product computes with.
inline Tensor bf16_rounded(const Tensor& t) {
  Tensor r = t.clone();
  for (int64_t i = 0; i < r.numel(); ++i) r.data<float>()[i] = float(bfloat16(t.data<float>()[i]));
  return r;
}

inline Attribute int_attr(int64_t v) { Attribute a; a.kind = Attribute::Kind::kInt; a.i = v; return a; }
inline Attribute float_attr(float v) { Attribute a; a.kind = Attribute::Kind::kFloat; a.f = v; return a; }
inline Attribute ints_attr(std::vector<int64_t> v) { Attribute a; a.kind = Attribute::Kind::kInts; a.ints = std::move(v); return a; }
inline Attribute string_attr(std::string v) { Attribute a; a.kind = Attribute::Kind::kString; a.s = std::move(v); return a; }

// Max |a - b| over float32 tensors of equal shape (infinity if the shapes differ).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32) return 1e300;
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, double(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
  return m;
}

}  // namespace ingot::testing
