// Helpers for GPU tests: every CUDA kernel is checked against the CPU reference kernels on
// random inputs, through the same Engine API users call. Without a GPU (CI) each test skips.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../ops/op_test_util.h"
#include "runtime/device.h"
#include "runtime/engine.h"

namespace ingot::testing {

// Sets an environment variable for a scope (null: unset), restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, saved_ = old;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, saved_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string saved_;
};

inline bool gpu_available() {
  const DeviceBackend* b = find_device_backend("cuda");
  return b && b->properties().has_value();
}

#define INGOT_REQUIRE_GPU()                                                     \
  do {                                                                          \
    if (!::ingot::testing::gpu_available()) GTEST_SKIP() << "no CUDA GPU here"; \
  } while (0)

// Random tensor of any numeric dtype: floats uniform in [lo, hi), integers in [lo, hi].
inline Tensor random_of(DType dt, Shape shape, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor f = random_tensor(shape, seed, float(lo), float(hi));
  Tensor t(dt, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = f.data<float>()[i];
    switch (dt) {
      case DType::kFloat32: t.data<float>()[i] = v; break;
      case DType::kFloat16: t.data<float16>()[i] = float16(v); break;
      case DType::kBFloat16: t.data<bfloat16>()[i] = bfloat16(v); break;
      case DType::kInt64: t.data<int64_t>()[i] = int64_t(std::lround(v)); break;
      case DType::kInt32: t.data<int32_t>()[i] = int32_t(std::lround(v)); break;
      case DType::kBool: t.data<bool>()[i] = v > 0.5 * (lo + hi); break;
      default: ADD_FAILURE() << "random_of: dtype " << dtype_name(dt); return t;
    }
  }
  return t;
}

// Runs `model` on a device and precision; fails the test on error.
inline std::vector<Tensor> run_model_on(const Model& model, const std::map<std::string, Tensor>& feeds,
                                        const std::string& device, const std::string& precision = "fp32",
                                        bool cuda_graph = true) {
  EngineOptions o;
  o.device = device;
  o.precision = precision;
  o.cuda_graph = cuda_graph;
  auto e = Engine::from_model(model, o);
  EXPECT_TRUE(e.has_value()) << device << ": " << e.status().message();
  if (!e) return {};
  auto out = (*e)->create_context()->run(feeds);
  EXPECT_TRUE(out.has_value()) << device << ": " << out.status().message();
  std::vector<Tensor> r;
  if (out) for (auto& nt : *out) r.push_back(nt.tensor);
  return r;
}

// Element i of any float or integer tensor as double.
inline double element(const Tensor& t, int64_t i) { return t.scalar_as_double(i); }

// Expects |a - b| <= atol + rtol·|b| elementwise (b the reference), same dtype and shape.
inline void expect_close(const Tensor& a, const Tensor& b, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = element(a, i), y = element(b, i);
    double err = std::fabs(x - y);
    if (std::isnan(x) != std::isnan(y) || err > atol + rtol * std::fabs(y)) {
      if (first < 0) first = i;
      ++bad;
    }
    if (!std::isnan(err)) worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.numel() << " elements differ (first at " << first
                    << ": " << (first >= 0 ? element(a, first) : 0) << " vs " << (first >= 0 ? element(b, first) : 0)
                    << "), max abs error " << worst;
}

// Runs a single-node model on the CPU (fp32 reference) and on CUDA, and compares every output.
inline void expect_cuda_matches_cpu(const Model& model, const std::map<std::string, Tensor>& feeds, double atol,
                                    double rtol, const std::string& what, bool cuda_graph = true) {
  auto ref = run_model_on(model, feeds, "cpu");
  auto got = run_model_on(model, feeds, "cuda", "fp32", cuda_graph);
  ASSERT_EQ(ref.size(), got.size()) << what;
  for (size_t i = 0; i < ref.size(); ++i) expect_close(got[i], ref[i], atol, rtol, what + ", output " + std::to_string(i));
}

// Builds `model` for cuda and runs it three times (the CUDA graph's replays after the eager first
// run): its one output within tol (absolute and relative) of `ref` every run, and the same bits
// every run (kernels that sum across CTAs do so in a fixed order).
inline void expect_cuda_runs_match(const Model& model, const std::map<std::string, Tensor>& feeds, const Tensor& ref,
                                   double tol, const std::string& what) {
  EngineOptions o;
  o.device = "cuda";
  auto e = Engine::from_model(model, o);
  ASSERT_TRUE(e.has_value()) << what << ": " << e.status().message();
  auto ctx = (*e)->create_context();
  Tensor first;
  for (int run = 0; run < 3; ++run) {
    auto out = ctx->run(feeds);
    ASSERT_TRUE(out.has_value()) << what << ": " << out.status().message();
    ASSERT_EQ(out->size(), 1u) << what;
    expect_close((*out)[0].tensor, ref, tol, tol, what + ", run " + std::to_string(run));
    if (run == 0) first = (*out)[0].tensor;
    else EXPECT_EQ(std::memcmp(first.raw(), (*out)[0].tensor.raw(), first.nbytes()), 0) << what << ", run " << run;
  }
}

// Contexts of `engine` on `threads` threads at once, each running `feeds` `runs` times: every
// run must succeed with the bits of `serial` (every output), counted per thread as failures.
inline void expect_concurrent_runs_match(const Engine& engine, const std::map<std::string, Tensor>& feeds,
                                         const std::vector<NamedTensor>& serial, int threads = 4, int runs = 20) {
  std::vector<std::thread> pool;
  std::vector<int> failures(size_t(threads), 0);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto ctx = engine.create_context();
      for (int i = 0; i < runs; ++i) {
        auto o = ctx->run(feeds);
        if (!o || o->size() != serial.size()) {
          ++failures[size_t(t)];
          continue;
        }
        for (size_t k = 0; k < o->size(); ++k)
          if (std::memcmp((*o)[k].tensor.raw(), serial[k].tensor.raw(), serial[k].tensor.nbytes()) != 0)
            ++failures[size_t(t)];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
}

}  // namespace ingot::testing
