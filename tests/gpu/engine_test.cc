// The CUDA engine end to end: every model fixture of both exporters against PyTorch's outputs
// (fp32 within 1e-4 of the output's magnitude; fp16 and bf16 within 1e-2 with every argmax
// equal), CUDA graphs against eager launches, engine files, device memory given back, and
// concurrent contexts, host outputs held and reused.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "../ops/graph_builder.h"
#include "backends/cuda/cuda_kernel.h"
#include "gpu_test_util.h"
#include "io/npy.h"
#include "plan/engine_file.h"

namespace fs = std::filesystem;

namespace ingot::testing {
namespace {

struct Fixture {
  std::string model, exporter;
};

std::vector<Fixture> fixtures() {
  std::vector<Fixture> out;
  fs::path root = fs::path(INGOT_SOURCE_DIR) / "tests" / "models";
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    for (const char* ex : {"torchscript", "dynamo"})
      if (fs::exists(d.path() / (std::string("model.") + ex + ".onnx"))) out.push_back({d.path().filename(), ex});
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) { return a.model + a.exporter < b.model + b.exporter; });
  return out;
}

fs::path dir_of(const Fixture& f) { return fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / f.model; }
std::string model_of(const Fixture& f) { return (dir_of(f) / ("model." + f.exporter + ".onnx")).string(); }

std::map<std::string, Tensor> npz(const fs::path& p) {
  auto z = read_npz(p.string());
  EXPECT_TRUE(z.has_value()) << z.status().message();
  return z ? *z : std::map<std::string, Tensor>{};
}

std::vector<NamedTensor> run_engine(const std::string& model, const std::map<std::string, Tensor>& inputs,
                                    const std::string& precision, bool cuda_graph = true, int runs = 1,
                                    const std::string& io_precision = "model") {
  EngineOptions eo;
  eo.device = "cuda";
  eo.precision = precision;
  eo.cuda_graph = cuda_graph;
  eo.io_precision = io_precision;
  auto e = Engine::load(model, eo);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  if (!e) return {};
  auto ctx = (*e)->create_context();
  std::vector<NamedTensor> outs;
  for (int i = 0; i < runs; ++i) {  // the second run replays the captured graph
    auto o = ctx->run(inputs);
    EXPECT_TRUE(o.has_value()) << o.status().message();
    if (!o) return {};
    outs = *o;
  }
  return outs;
}

struct Errors {
  double max_abs = 0, magnitude = 0;
  int64_t rows = 0, argmax_agree = 0;
  int64_t ties = 0;  // rows whose reference top-2 gap is within the tolerance: no defined argmax
};

// Argmax agreement is asked of rows whose best and second-best reference logits differ by more
// than the precision's tolerance: below it (the random MobileNetV3 fixture's logits are ~1e-7
// apart, under float16's smallest step) any correct half-precision result may pick either.
constexpr double kHalfTolerance = 1e-2;

Errors errors(const Tensor& got, const Tensor& want) {
  Errors e;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = got.scalar_as_double(i), b = want.scalar_as_double(i);
    e.max_abs = std::max(e.max_abs, std::isnan(a) ? INFINITY : std::fabs(a - b));
    e.magnitude = std::max(e.magnitude, std::fabs(b));
  }
  int64_t last = want.rank() ? want.dim(want.rank() - 1) : 1;
  if (last > 1) {
    for (int64_t r = 0; r < want.numel() / last; ++r, ++e.rows) {
      int64_t ga = 0, wa = 0;
      for (int64_t j = 1; j < last; ++j) {
        if (got.scalar_as_double(r * last + j) > got.scalar_as_double(r * last + ga)) ga = j;
        if (want.scalar_as_double(r * last + j) > want.scalar_as_double(r * last + wa)) wa = j;
      }
      double second = -INFINITY;
      for (int64_t j = 0; j < last; ++j)
        if (j != wa) second = std::max(second, want.scalar_as_double(r * last + j));
      if (want.scalar_as_double(r * last + wa) - second <= kHalfTolerance) ++e.ties;
      else e.argmax_agree += ga == wa;
    }
  }
  return e;
}

class CudaFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(CudaFixture, Fp32MatchesPyTorch) {
  INGOT_REQUIRE_GPU();
  const Fixture& f = GetParam();
  auto inputs = npz(dir_of(f) / "inputs.npz");
  auto ref = npz(dir_of(f) / "reference.npz");
  for (bool graph : {true, false}) {
    auto outs = run_engine(model_of(f), inputs, "fp32", graph, 2);
    ASSERT_FALSE(outs.empty());
    for (const auto& o : outs) {
      ASSERT_TRUE(ref.count(o.name)) << o.name;
      ASSERT_EQ(o.tensor.shape(), ref.at(o.name).shape()) << o.name;
      Errors e = errors(o.tensor, ref.at(o.name));
      EXPECT_LE(e.max_abs, 1e-4 * std::max(1.0, e.magnitude))
          << f.model << "/" << f.exporter << " " << o.name << (graph ? " (CUDA graph)" : " (eager)");
    }
  }
}

TEST_P(CudaFixture, HalfPrecisionMatchesPyTorch) {
  INGOT_REQUIRE_GPU();
  const Fixture& f = GetParam();
  auto inputs = npz(dir_of(f) / "inputs.npz");
  auto ref = npz(dir_of(f) / "reference.npz");
  for (const char* precision : {"fp16", "bf16"}) {
    auto outs = run_engine(model_of(f), inputs, precision, true, 2);
    ASSERT_FALSE(outs.empty()) << precision;
    for (const auto& o : outs) {
      ASSERT_TRUE(ref.count(o.name)) << o.name;
      EXPECT_EQ(o.tensor.dtype(), ref.at(o.name).dtype()) << "the engine's interface keeps its dtypes";
      Errors e = errors(o.tensor, ref.at(o.name));
      EXPECT_LE(e.max_abs, kHalfTolerance) << f.model << "/" << f.exporter << " " << precision << " " << o.name;
      EXPECT_EQ(e.argmax_agree, e.rows - e.ties) << f.model << "/" << f.exporter << " " << precision << " " << o.name
                                                  << " (" << e.ties << " tied rows not compared)";
    }
  }
}

// --io-precision fp16: the float32 inputs go in as float16 and the outputs come back float16,
// within the half-precision tolerance of PyTorch's float32 results whatever the engine computes in.
TEST_P(CudaFixture, Float16IoMatchesPyTorch) {
  INGOT_REQUIRE_GPU();
  const Fixture& f = GetParam();
  auto inputs = npz(dir_of(f) / "inputs.npz");
  auto ref = npz(dir_of(f) / "reference.npz");
  for (auto& [name, t] : inputs) {
    if (t.dtype() != DType::kFloat32) continue;
    Tensor h(DType::kFloat16, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) h.data<float16>()[i] = float16(t.data<float>()[i]);
    t = std::move(h);
  }
  for (const char* precision : {"fp16", "fp32"}) {
    auto outs = run_engine(model_of(f), inputs, precision, true, 2, "fp16");
    ASSERT_FALSE(outs.empty()) << precision;
    for (const auto& o : outs) {
      ASSERT_TRUE(ref.count(o.name)) << o.name;
      if (ref.at(o.name).dtype() == DType::kFloat32) {
        EXPECT_EQ(o.tensor.dtype(), DType::kFloat16) << o.name;
      }
      Errors e = errors(o.tensor, ref.at(o.name));
      EXPECT_LE(e.max_abs, kHalfTolerance) << f.model << "/" << f.exporter << " " << precision << " " << o.name;
      EXPECT_EQ(e.argmax_agree, e.rows - e.ties) << f.model << "/" << f.exporter << " " << precision << " " << o.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaFixture, ::testing::ValuesIn(fixtures()),
                         [](const ::testing::TestParamInfo<Fixture>& i) { return i.param.model + "_" + i.param.exporter; });

Fixture bert() { return {"bert", "dynamo"}; }

TEST(CudaEngine, EveryNodeRunsOnTheGpuForTheFixtures) {
  INGOT_REQUIRE_GPU();
  for (const Fixture& f : fixtures()) {
    EngineOptions eo;
    eo.device = "cuda";
    auto inputs = npz(dir_of(f) / "inputs.npz");
    Profile p;
    for (const auto& [name, t] : inputs) p.min[name] = p.opt[name] = p.max[name] = t.shape();
    eo.profiles.push_back(p);
    auto e = Engine::load(model_of(f), eo);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    for (const FallbackOp& fb : (*e)->device()->fallback_ops())
      ADD_FAILURE() << f.model << "/" << f.exporter << ": " << fb.node << " runs on the CPU: " << fb.reason;
  }
}

TEST(CudaEngine, EngineFileRoundTripAndComputeCapabilityCheck) {
  INGOT_REQUIRE_GPU();
  fs::path tmp = fs::temp_directory_path() / ("ingot_gpu_engine_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  EngineOptions eo;
  eo.device = "cuda";
  eo.precision = "fp16";
  auto e = Engine::load(model_of(bert()), eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  std::string path = (tmp / "bert.ingot").string();
  ASSERT_TRUE((*e)->save(path).is_ok());
  auto direct = (*e)->create_context()->run(inputs);
  ASSERT_TRUE(direct.has_value());

  auto loaded = Engine::load(path);  // device and precision come from the file
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  EXPECT_EQ((*loaded)->options().device, "cuda");
  EXPECT_EQ((*loaded)->options().precision, "fp16");
  auto again = (*loaded)->create_context()->run(inputs);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  for (size_t i = 0; i < direct->size(); ++i) expect_close((*again)[i].tensor, (*direct)[i].tensor, 0, 0, "reloaded");

  // The same engine claiming another GPU generation is refused with the reason.
  auto file = read_engine_file(path);
  ASSERT_TRUE(file.has_value());
  file->manifest["cuda"]["compute_capability"] = "1.0";
  std::string other = (tmp / "other.ingot").string();
  ASSERT_TRUE(write_engine_file(other, file->model, file->manifest).is_ok());
  auto refused = Engine::load(other);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("compute capability 1.0"), std::string::npos) << refused.status().message();
  fs::remove_all(tmp);
}

// Build-time tuning (Engine::tune_at_opt_shapes): a product large enough to be tuned wide is, its tactic is
// saved with the engine and read back, the loaded engine computes what the tuned one did, and a
// malformed tactic in the file is refused with the field named.
TEST(CudaEngine, TunedProductsAreKeptInTheEngineFile) {
  INGOT_REQUIRE_GPU();
  fs::path tmp = fs::temp_directory_path() / ("ingot_gpu_tuned_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  GraphBuilder b("test:tuned_product");
  const Shape x_shape{520, 1000};  // 2·520·1000·1032 ≥ 1e9 flops: tuned wide; a shape no other test runs
  const ValueId w = b.constant("W", random_of(DType::kFloat32, {1000, 1032}, 12, -0.05, 0.05));
  b.output(b.node("MatMul", {b.input("X", DType::kFloat32, x_shape), w}));
  const std::map<std::string, Tensor> inputs{{"X", random_of(DType::kFloat32, x_shape, 11)}};
  EngineOptions eo;
  eo.device = "cuda";
  eo.precision = "fp16";
  auto e = Engine::from_model(b.m, eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  ASSERT_TRUE((*e)->tune_at_opt_shapes().is_ok());  // its static shape
  const nlohmann::json tuning = (*e)->options().device_tuning;
  ASSERT_TRUE(tuning.contains("cuda_gemm")) << tuning.dump();
  ASSERT_EQ(tuning["cuda_gemm"].size(), 1u) << tuning.dump();
  EXPECT_EQ(tuning["cuda_gemm"][0]["product"].get<std::string>().rfind("m=520 n=1032 k=1000 ", 0), 0u) << tuning.dump();
  auto direct = (*e)->create_context()->run(inputs);
  ASSERT_TRUE(direct.has_value()) << direct.status().message();
  expect_close(direct->at(0).tensor, run_model_on(b.m, inputs, "cpu").at(0), 2e-2, 1e-2, "tuned");

  const std::string path = (tmp / "tuned.ingot").string();
  ASSERT_TRUE((*e)->save(path).is_ok());
  auto loaded = Engine::load(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  EXPECT_EQ((*loaded)->options().device_tuning, tuning);
  auto again = (*loaded)->create_context()->run(inputs);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  expect_close(again->at(0).tensor, direct->at(0).tensor, 0, 0, "reloaded");

  auto file = read_engine_file(path);
  ASSERT_TRUE(file.has_value());
  file->manifest["device_tuning"]["cuda_gemm"][0]["config"] = {66, 1};
  const std::string bad = (tmp / "bad.ingot").string();
  ASSERT_TRUE(write_engine_file(bad, file->model, file->manifest).is_ok());
  auto refused = Engine::load(bad);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("device_tuning: cuda_gemm[0]: config has 2 values"), std::string::npos)
      << refused.status().message();
  fs::remove_all(tmp);
}

TEST(CudaEngine, Fp16WeightsTakeHalfTheBytes) {
  INGOT_REQUIRE_GPU();
  int64_t bytes[2];
  const char* precisions[2] = {"fp32", "fp16"};
  for (int i = 0; i < 2; ++i) {
    EngineOptions eo;
    eo.device = "cuda";
    eo.precision = precisions[i];
    auto e = Engine::load(model_of({"distilbert", "torchscript"}), eo);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    bytes[i] = (*e)->device()->memory().weights;
  }
  EXPECT_GT(bytes[0], 0);
  EXPECT_LE(double(bytes[1]), 0.55 * double(bytes[0])) << "fp32 " << bytes[0] << " B, fp16 " << bytes[1] << " B";
}

TEST(CudaEngine, DeviceMemoryIsGivenBack) {
  INGOT_REQUIRE_GPU();
  const DeviceBackend* b = find_device_backend("cuda");
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  // The first round pays the one-time costs (the CUDA context, library state, kernel modules
  // loaded on first use); `before` is read after it.
  std::optional<int64_t> before;
  for (int round = 0; round < 4; ++round) {
    if (round == 1) {
      auto f = b->free_memory();
      ASSERT_TRUE(f.has_value());
      before = *f;
    }
    EngineOptions eo;
    eo.device = "cuda";
    auto e = Engine::load(model_of(bert()), eo);
    ASSERT_TRUE(e.has_value());
    std::vector<std::unique_ptr<ExecutionContext>> ctxs;
    for (int c = 0; c < 3; ++c) {
      ctxs.push_back((*e)->create_context());
      ASSERT_TRUE(ctxs.back()->run(inputs).has_value());
      ASSERT_TRUE(ctxs.back()->run(inputs).has_value());
    }
    auto during = b->free_memory();
    ASSERT_TRUE(during.has_value());
    if (before) {
      EXPECT_LT(*during, *before) << "the engine and its contexts hold device memory";
    }
  }
  auto after = b->free_memory();
  ASSERT_TRUE(after.has_value());
  // Allocator granularity aside (2 MiB pages), everything comes back.
  EXPECT_GE(*after, *before - (int64_t(8) << 20)) << "before " << *before << " B free, after " << *after;
}

// A run's GPU compute time (DeviceRunTimes::compute_ms): with a CUDA graph, the graph's own
// first and last nodes record it; without one, events on the stream around the kernels. Either
// way it is positive and within the run's wall clock, and every run records its own.
TEST(CudaEngine, ComputeTimeIsRecordedEveryRun) {
  INGOT_REQUIRE_GPU();
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  for (bool graph : {true, false}) {
    EngineOptions eo;
    eo.device = "cuda";
    eo.cuda_graph = graph;
    auto e = Engine::load(model_of(bert()), eo);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    auto ctx = (*e)->create_context();
    ASSERT_NE(ctx->device(), nullptr);
    for (int run = 0; run < 4; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_TRUE(ctx->run(inputs).has_value());
      const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const DeviceRunTimes t = ctx->device()->last_run_times();
      EXPECT_GT(t.compute_ms, 0.0) << (graph ? "graph" : "no graph") << ", run " << run;
      EXPECT_LT(t.compute_ms, wall_ms) << (graph ? "graph" : "no graph") << ", run " << run;
      EXPECT_GE(t.h2d_ms, 0.0);
      EXPECT_GE(t.d2h_ms, 0.0);
      EXPECT_LT(t.h2d_ms + t.compute_ms + t.d2h_ms, wall_ms);
    }
  }
}

TEST(CudaEngine, ConcurrentContextsMatchSerialRuns) {
  INGOT_REQUIRE_GPU();
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  EngineOptions eo;
  eo.device = "cuda";
  auto e = Engine::load(model_of(bert()), eo);
  ASSERT_TRUE(e.has_value());
  auto serial = (*e)->create_context()->run(inputs);
  ASSERT_TRUE(serial.has_value());
  expect_concurrent_runs_match(**e, inputs, *serial);
}

// A run's host outputs reuse the memory of the same shape's previous outputs only once the
// caller has let go of them: outputs still held keep their values through later runs on other
// inputs, and a released output's memory is handed out again (no fresh pages per run).
TEST(CudaEngine, HeldOutputsKeepTheirValuesAndReleasedOnesAreReused) {
  INGOT_REQUIRE_GPU();
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  std::map<std::string, Tensor> other;
  for (const auto& [name, t] : inputs) {
    Tensor c = t.clone();
    if (name == "input_ids")  // other tokens of the fixture's 1000 (mask and token types as they were)
      for (int64_t i = 0; i < c.numel(); ++i) c.data<int64_t>()[i] = (c.data<int64_t>()[i] + 7) % 1000;
    other[name] = c;
  }
  EngineOptions eo;
  eo.device = "cuda";
  auto e = Engine::load(model_of(bert()), eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto ctx = (*e)->create_context();
  auto first = ctx->run(inputs);
  ASSERT_TRUE(first.has_value()) << first.status().message();
  std::vector<Tensor> kept;
  for (const NamedTensor& o : *first) kept.push_back(o.tensor.clone());
  for (int i = 0; i < 3; ++i) {  // the later runs replay the graph on the other inputs
    auto later = ctx->run(other);
    ASSERT_TRUE(later.has_value()) << later.status().message();
    ASSERT_EQ(later->size(), first->size());
    for (size_t k = 0; k < first->size(); ++k) {
      EXPECT_NE((*later)[k].tensor.raw(), (*first)[k].tensor.raw()) << "a held output's memory was handed out again";
      EXPECT_EQ(std::memcmp((*first)[k].tensor.raw(), kept[k].raw(), kept[k].nbytes()), 0)
          << (*first)[k].name << " changed after a later run";
    }
  }
  const void* released = nullptr;
  {  // this run's outputs are let go of at the end of the scope
    auto differs = ctx->run(other);
    ASSERT_TRUE(differs.has_value());
    EXPECT_NE(std::memcmp((*differs)[0].tensor.raw(), kept[0].raw(), kept[0].nbytes()), 0)
        << "the other inputs give the same output: the test shows nothing";
    released = (*differs)[0].tensor.raw();
  }
  auto again = ctx->run(other);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ((*again)[0].tensor.raw(), released) << "a released output's memory was not reused";
}

// Outputs of 1 MB and more come back straight into pinned memory that the context hands out
// (cuda_context.cc, kPinnedOutputBytes): right every run, the same block again once released,
// a new one while the caller holds it, and a held block never overwritten. The input, 8 MB, goes
// in two pieces copied by the host's threads (send_input).
TEST(CudaEngine, LargeOutputsComeBackIntoReusedPinnedMemory) {
  INGOT_REQUIRE_GPU();
  GraphBuilder b("test:large_output");
  const Shape shape{2048, 1024};  // 8 MB of float32
  b.output(b.node("Softmax", {b.input("X", DType::kFloat32, shape)}));
  const std::map<std::string, Tensor> one{{"X", random_of(DType::kFloat32, shape, 1)}};
  const std::map<std::string, Tensor> two{{"X", random_of(DType::kFloat32, shape, 2)}};
  const Tensor ref_one = run_model_on(b.m, one, "cpu").at(0), ref_two = run_model_on(b.m, two, "cpu").at(0);
  EngineOptions o;
  o.device = "cuda";
  auto e = Engine::from_model(b.m, o);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  auto ctx = (*e)->create_context();
  auto pinned = [](const void* p) {
    cudaPointerAttributes a{};
    return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost;
  };
  const void* released = nullptr;
  for (int run = 0; run < 3; ++run) {  // eager first run, then graph replays
    auto out = ctx->run(run % 2 ? two : one);
    ASSERT_TRUE(out.has_value()) << out.status().message();
    const Tensor& y = out->at(0).tensor;
    expect_close(y, run % 2 ? ref_two : ref_one, 1e-5, 1e-5, "run " + std::to_string(run));
    EXPECT_TRUE(pinned(y.raw())) << "run " << run << ": an 8 MB output is not in pinned memory";
    if (run > 0) {
      EXPECT_EQ(y.raw(), released) << "run " << run << ": the released block was not reused";
    }
    released = y.raw();
  }
  auto held = ctx->run(one);
  ASSERT_TRUE(held.has_value());
  const Tensor kept = held->at(0).tensor.clone();
  auto next = ctx->run(two);
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(next->at(0).tensor.raw(), held->at(0).tensor.raw()) << "a held output's memory was handed out again";
  expect_close(next->at(0).tensor, ref_two, 1e-5, 1e-5, "while the last output is held");
  EXPECT_EQ(std::memcmp(held->at(0).tensor.raw(), kept.raw(), kept.nbytes()), 0) << "a held output changed";
  held.value().clear();  // released: the pinned block is free for the next run again
  next.value().clear();
  auto after = ctx->run(one);
  ASSERT_TRUE(after.has_value());
  expect_close(after->at(0).tensor, ref_one, 1e-5, 1e-5, "after the release");
  EXPECT_TRUE(pinned(after->at(0).tensor.raw())) << "the pinned block was not used again after its release";
}

TEST(CudaEngine, ShapeOutsideTheProfileIsRefused) {
  INGOT_REQUIRE_GPU();
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  EngineOptions eo;
  eo.device = "cuda";
  Profile p;
  for (const auto& [name, t] : inputs) p.min[name] = p.opt[name] = p.max[name] = t.shape();
  eo.profiles.push_back(p);
  auto e = Engine::load(model_of(bert()), eo);
  ASSERT_TRUE(e.has_value());
  std::map<std::string, Tensor> bigger;
  for (const auto& [name, t] : inputs) {
    Shape s = t.shape();
    s[0] += 1;
    bigger[name] = Tensor(t.dtype(), s);
  }
  auto r = (*e)->create_context()->run(bigger);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("outside the engine's optimization profiles"), std::string::npos);
}

// Device memory the GPU cannot give (a 1 PiB buffer) is an out-of-memory error that says how
// much was asked and how much the GPU has free of its total, and the process goes on: the
// next allocation and an engine's run work.
TEST(CudaEngine, DeviceAllocationTooLargeIsOutOfMemory) {
  INGOT_REQUIRE_GPU();
  auto b = cuda::DeviceBuffer::allocate(size_t(1) << 50);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.status().code(), ErrorCode::kOutOfMemory) << b.status().message();
  EXPECT_NE(b.status().message().find("cannot allocate 1048576.0 GiB (1125899906842624 bytes) of GPU memory, "),
            std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("GiB free of"), std::string::npos) << b.status().message();
  EXPECT_TRUE(cuda::DeviceBuffer::allocate(1 << 20).has_value());
  auto inputs = npz(dir_of(bert()) / "inputs.npz");
  EXPECT_FALSE(run_engine(model_of(bert()), inputs, "fp32").empty());
}

// Runs each fixture's fp16 engine with the environment variable `name` at `baseline`, then at
// `value` (null: unset; `runs` runs, the graph replayed after the first), through the captured
// graph and eager launches, and expects the same outputs bit for bit. Leaves `name` as it was.
void expect_switch_changes_no_output(const std::vector<Fixture>& fixtures, const char* name, const char* baseline,
                                     const char* value, int runs) {
  for (const Fixture& f : fixtures) {
    auto inputs = npz(dir_of(f) / "inputs.npz");
    for (bool graph : {true, false}) {
      std::vector<NamedTensor> before, after;
      {
        const ScopedEnv env(name, baseline);
        before = run_engine(model_of(f), inputs, "fp16", graph, 2);
      }
      {
        const ScopedEnv env(name, value);
        after = run_engine(model_of(f), inputs, "fp16", graph, runs);
      }
      ASSERT_EQ(after.size(), before.size());
      ASSERT_FALSE(after.empty());
      for (size_t i = 0; i < after.size(); ++i)
        expect_close(after[i].tensor, before[i].tensor, 0, 0,
                     f.model + " " + after[i].name + " with " + name + "=" + (value ? value : "(unset)"));
    }
  }
}

// Prefetching the next steps' weights into L2 (cuda_l2_prefetch.h) is a hint: with it off the
// fixtures' outputs are bit for bit the same, through the captured graph and eager launches.
TEST(CudaEngine, L2PrefetchChangesNoOutput) {
  INGOT_REQUIRE_GPU();
  expect_switch_changes_no_output({bert(), Fixture{"distilbert", "torchscript"}}, "INGOT_CUDA_L2_PREFETCH", nullptr, "0",
                                  2);
}

// Memset nodes of a captured graph become kernel nodes writing the same bytes
// (cuda_graph_memset.h): the fixtures' outputs are bit for bit those of the graph as captured.
TEST(CudaEngine, MemsetNodesAsKernelsChangeNoOutput) {
  INGOT_REQUIRE_GPU();
  expect_switch_changes_no_output({bert(), Fixture{"distilbert", "torchscript"}, Fixture{"resnet18", "torchscript"}},
                                  "INGOT_CUDA_GRAPH_MEMSET", "keep", nullptr, 3);
}

// Programmatic dependent launch (cuda_dependent_launch.h) lets a kernel start before the one
// before it has ended (in a graph, once the kernel before has launched); each waits before
// touching activations, so the outputs are bit for bit those of ordinary launches ("0"), in a
// graph and without one, run after run: on ("1"), and auto, the default (the fixtures' graphs
// are small, so it is on there).
TEST(CudaEngine, DependentLaunchChangesNoOutput) {
  INGOT_REQUIRE_GPU();
  for (const char* mode : {"1", "auto", static_cast<const char*>(nullptr)})
    expect_switch_changes_no_output({bert(), Fixture{"distilbert", "torchscript"}, Fixture{"gpt2", "torchscript"},
                                     Fixture{"resnet18", "torchscript"}},
                                    "INGOT_CUDA_PDL", "0", mode, 3);
}

// INGOT_CUDA_REPEAT_OPS (a timing aid): the named op types' kernels run twice; none of these
// writes over its inputs, so every output is bit for bit the same, in a graph and without one.
TEST(CudaEngine, RepeatOpsChangesNoOutputOfOpsThatKeepTheirInputs) {
  INGOT_REQUIRE_GPU();
  expect_switch_changes_no_output({bert(), Fixture{"distilbert", "torchscript"}}, "INGOT_CUDA_REPEAT_OPS", nullptr,
                                  "EmbedLayerNorm,Attention", 2);
}

// INGOT_CUDA_SKIP_OPS (a timing aid): the named op types enqueue nothing, so their outputs are
// left unwritten; without it the same model matches the CPU.
TEST(CudaEngine, SkipOpsLeavesThoseKernelsOut) {
  INGOT_REQUIRE_GPU();
  GraphBuilder b("test:skip_ops");
  b.output(b.node("Softmax", {b.input("X", DType::kFloat32, {16, 64})}));
  const std::map<std::string, Tensor> feeds{{"X", random_of(DType::kFloat32, {16, 64}, 1)}};
  auto ref = run_model_on(b.m, feeds, "cpu");
  std::vector<Tensor> skipped;
  {
    const ScopedEnv skip("INGOT_CUDA_SKIP_OPS", "Gather,Softmax");
    skipped = run_model_on(b.m, feeds, "cuda");
  }
  auto full = run_model_on(b.m, feeds, "cuda");
  ASSERT_EQ(ref.size(), 1u);
  ASSERT_EQ(skipped.size(), 1u);
  ASSERT_EQ(full.size(), 1u);
  expect_close(full[0], ref[0], 1e-5, 1e-5, "Softmax");
  int64_t differ = 0;
  for (int64_t i = 0; i < ref[0].numel(); ++i) differ += !(std::fabs(element(skipped[0], i) - element(ref[0], i)) <= 1e-3);
  EXPECT_GT(differ, 0) << "the skipped Softmax still wrote its output";
}

// A random op (no CUDA kernel: it runs on the CPU between GPU kernels) draws anew every run of a
// CUDA engine: such a plan is never captured into a graph that would replay one draw. With a
// seed, an engine built afresh repeats the first run.
TEST(CudaEngine, RandomOpOnTheCpuDrawsEveryRun) {
  INGOT_REQUIRE_GPU();
  GraphBuilder b("test:random_on_cuda");
  ValueId x = b.input("X", DType::kFloat32, {8, 32});
  Attributes seed;
  seed.set("seed", float_attr(3.f));
  b.output(b.node("Add", {x, b.node("RandomNormalLike", {x}, seed)}));
  const std::map<std::string, Tensor> feeds{{"X", random_of(DType::kFloat32, {8, 32}, 1)}};
  EngineOptions o;
  o.device = "cuda";
  auto e1 = Engine::from_model(b.m, o), e2 = Engine::from_model(b.m, o);
  ASSERT_TRUE(e1 && e2);
  auto ctx = (*e1)->create_context();
  auto r1 = ctx->run(feeds), r2 = ctx->run(feeds), r3 = ctx->run(feeds), fresh = (*e2)->create_context()->run(feeds);
  ASSERT_TRUE(r1 && r2 && r3 && fresh);
  auto differ = [](const Tensor& a, const Tensor& c) {
    int64_t n = 0;
    for (int64_t i = 0; i < a.numel(); ++i) n += element(a, i) != element(c, i);
    return n;
  };
  EXPECT_GT(differ((*r1)[0].tensor, (*r2)[0].tensor), 200);
  EXPECT_GT(differ((*r2)[0].tensor, (*r3)[0].tensor), 200);
  EXPECT_EQ(differ((*r1)[0].tensor, (*fresh)[0].tensor), 0);
  EXPECT_FALSE((*e1)->device()->fallback_ops().empty());
}

}  // namespace
}  // namespace ingot::testing
