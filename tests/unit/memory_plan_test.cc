// The static memory plan: lifetimes that do not overlap share bytes, views share their source's
// buffer, graph inputs/outputs stay out of the arena; contexts run concurrently; an engine without
// a profile plans each input shape it runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "io/npy.h"
#include "plan/memory_plan.h"
#include "runtime/engine.h"

using namespace ingot;

namespace {

// x -> a -> b -> c -> y, each 1000 bytes.
struct Chain {
  Graph g;
  PlanInput in;
  Chain(int links, bool view_in_middle = false) {
    ValueId prev = g.intern("x");
    g.inputs.push_back(prev);
    for (int i = 0; i < links; ++i) {
      Node n;
      n.op_type = "Op";
      n.inputs = {prev};
      ValueId out = g.intern(i + 1 == links ? "y" : "v" + std::to_string(i));
      n.outputs = {out};
      g.nodes.push_back(n);
      prev = out;
      in.order.push_back(i);
      in.alias.push_back({view_in_middle && i == links / 2 ? 0 : -1});
    }
    g.outputs.push_back(prev);
    in.graph = &g;
    in.max_bytes.assign(g.values.size(), 1000);
  }
};

TEST(MemoryPlan, ReusesDeadBuffers) {
  Chain c(6);
  MemoryPlan p = plan_memory(c.in);
  // v0..v4 are planned; at most two are alive at once (an op's input and output).
  EXPECT_EQ(p.planned_values, 5);
  EXPECT_EQ(p.intermediate_bytes, 5 * 1024);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  EXPECT_EQ(p.offset[size_t(c.g.find("x"))], MemoryPlan::kNotPlanned);
  EXPECT_EQ(p.offset[size_t(c.g.find("y"))], MemoryPlan::kNotPlanned);
  EXPECT_NE(p.offset[size_t(c.g.find("v0"))], p.offset[size_t(c.g.find("v1"))]);
}

TEST(MemoryPlan, ViewsShareTheirSourcesBuffer) {
  Chain c(6, /*view_in_middle=*/true);
  MemoryPlan p = plan_memory(c.in);
  // node 3 outputs v3 as a view of v2: one buffer, alive from v2's definition to v3's last read.
  EXPECT_EQ(p.offset[size_t(c.g.find("v2"))], p.offset[size_t(c.g.find("v3"))]);
  EXPECT_NE(p.offset[size_t(c.g.find("v4"))], p.offset[size_t(c.g.find("v2"))]);
}

TEST(MemoryPlan, ElementwiseChainsRunInPlace) {
  Chain c(6);
  c.in.in_place.assign(6, {0});
  MemoryPlan p = plan_memory(c.in);
  // v0..v4 each overwrite their input: one buffer for the whole chain.
  EXPECT_EQ(p.arena_bytes, 1024);
  for (const char* v : {"v1", "v2", "v3", "v4"}) EXPECT_EQ(p.offset[size_t(c.g.find(v))], p.offset[size_t(c.g.find("v0"))]);
  // x, a graph input, is never overwritten: v0 starts the arena buffer.
  EXPECT_EQ(p.offset[size_t(c.g.find("x"))], MemoryPlan::kNotPlanned);
}

TEST(MemoryPlan, InPlaceOnlyWhenTheInputDiesThere) {
  // x -> v0 -> v1 (in place allowed) but v0 is also read by a later node: no in-place for v1.
  Chain c(4);
  Node late;
  late.op_type = "Op";
  late.inputs = {c.g.find("v0"), c.g.find("v2")};
  late.outputs = {c.g.intern("w")};
  c.g.nodes.push_back(late);
  c.g.outputs.push_back(c.g.find("w"));
  c.in.order.push_back(4);
  c.in.alias.push_back({-1});
  c.in.max_bytes.assign(c.g.values.size(), 1000);
  c.in.in_place.assign(5, {0});
  MemoryPlan p = plan_memory(c.in);
  EXPECT_NE(p.offset[size_t(c.g.find("v1"))], p.offset[size_t(c.g.find("v0"))]);
  EXPECT_EQ(p.offset[size_t(c.g.find("v2"))], p.offset[size_t(c.g.find("v1"))]);  // v1 dies at node 2
  // Different sizes are never merged.
  c.in.max_bytes[size_t(c.g.find("v2"))] = 2000;
  MemoryPlan q = plan_memory(c.in);
  EXPECT_NE(q.offset[size_t(c.g.find("v2"))], q.offset[size_t(c.g.find("v1"))]);
}

// x [n, 64] -> Relu -> Sigmoid -> Tanh -> Neg -> Abs -> y, n dynamic.
Model elementwise_chain() {
  Model m;
  m.path = "test:inplace";
  m.ir_version = 8;
  m.opsets[""] = 17;
  Graph& g = m.graph;
  ValueId x = g.intern("x");
  g.value(x).dtype = DType::kFloat32;
  g.value(x).shape = SymShape{Dim{-1, "n"}, Dim{64, ""}};
  g.inputs.push_back(x);
  ValueId prev = x;
  const char* ops[] = {"Relu", "Sigmoid", "Tanh", "Neg", "Abs"};
  for (int i = 0; i < 5; ++i) {
    Node n;
    n.op_type = ops[i];
    n.name = std::string(ops[i]) + "_0";
    n.inputs = {prev};
    ValueId out = g.intern(i == 4 ? "y" : "t" + std::to_string(i));
    n.outputs = {out};
    g.nodes.push_back(n);
    prev = out;
  }
  g.outputs.push_back(prev);
  return m;
}

Tensor chain_input(int64_t n) {
  Tensor in(DType::kFloat32, {n, 64});
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = float(i % 17) / 4.0f - 2.0f;
  return in;
}

TEST(MemoryPlan, InPlaceEngineMatchesHeapRun) {
  // The chain on a profile: t0..t3 share one arena buffer, and the results equal an unplanned run's.
  Model m = elementwise_chain();
  EngineOptions eo;
  eo.disabled_passes = {"fuse_elementwise"};  // which would make the chain one node
  Profile pr;
  pr.min["x"] = {1, 64};
  pr.opt["x"] = {8, 64};
  pr.max["x"] = {8, 64};
  eo.profiles.push_back(pr);
  auto planned = Engine::from_model(m, eo);
  ASSERT_TRUE(planned.has_value()) << planned.status().message();
  const MemoryPlan* plan = (*planned)->memory_plan();
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->arena_bytes, 8 * 64 * 4) << "t0..t3 share one buffer";
  EngineOptions unplanned;
  unplanned.disabled_passes = eo.disabled_passes;
  unplanned.plan_each_shape = false;
  auto heap = Engine::from_model(m, unplanned);
  ASSERT_TRUE(heap.has_value());
  Tensor in = chain_input(5);
  auto a = (*planned)->create_context()->run({{"x", in}});
  auto b = (*heap)->create_context()->run({{"x", in}});
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(0, std::memcmp((*a)[0].tensor.raw(), (*b)[0].tensor.raw(), (*a)[0].tensor.nbytes()));
}

// The chain without a profile, as two engines: one planning each shape, one on heap buffers,
// each with a context.
struct PlannedAndHeap {
  std::shared_ptr<Engine> planned, heap;
  std::unique_ptr<ExecutionContext> ctx, heap_ctx;
  PlannedAndHeap() {
    Model m = elementwise_chain();
    EngineOptions eo;
    eo.disabled_passes = {"fuse_elementwise"};
    auto p = Engine::from_model(m, eo);
    eo.plan_each_shape = false;
    auto h = Engine::from_model(m, eo);
    if (!p || !h) return;
    planned = *p, heap = *h;
    ctx = planned->create_context(), heap_ctx = heap->create_context();
  }
  // Runs both on n rows: whether the planned run gave [n, 64] bit for bit as the heap run did.
  ::testing::AssertionResult same_output(int64_t n) {
    Tensor in = chain_input(n);
    auto a = ctx->run({{"x", in}});
    auto b = heap_ctx->run({{"x", in}});
    if (!a || !b) return ::testing::AssertionFailure() << "a run failed, n=" << n;
    if ((*a)[0].tensor.shape() != Shape{n, 64}) return ::testing::AssertionFailure() << "shape, n=" << n;
    if (std::memcmp((*a)[0].tensor.raw(), (*b)[0].tensor.raw(), (*a)[0].tensor.nbytes()) != 0)
      return ::testing::AssertionFailure() << "outputs differ, n=" << n;
    return ::testing::AssertionSuccess();
  }
};

TEST(MemoryPlan, EngineWithoutProfilePlansEachShape) {
  // No profile, a dynamic input: each shape's first run plans it, the context's arena grows to the
  // largest, and every run equals a heap run's, shapes alternating.
  PlannedAndHeap e;
  ASSERT_TRUE(e.planned && e.heap);
  EXPECT_EQ(e.planned->memory_plan(), nullptr);
  EXPECT_EQ(e.ctx->arena_bytes(), 0);
  const int64_t rows[] = {5, 9, 5, 1, 9}, arena_rows[] = {5, 9, 9, 9, 9};
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(e.same_output(rows[r]));
    EXPECT_EQ(e.ctx->arena_bytes(), arena_rows[r] * 64 * 4) << "t0..t3 share one buffer; run " << r;
  }
  EXPECT_EQ(e.heap_ctx->arena_bytes(), 0);
}

TEST(MemoryPlan, ShapesPastThePlanCacheShareTheLargestPlan) {
  // More distinct shapes than the engine keeps plans for: the later ones run on the largest plan
  // kept, its slots taking the values that fit (all of them here: the later shapes are smaller),
  // and every output is still right.
  PlannedAndHeap e;
  ASSERT_TRUE(e.planned && e.heap);
  const int64_t kept = int64_t(Engine::kMaxShapePlans), first = 7, largest = first + kept - 1;
  std::vector<int64_t> rows;
  for (int64_t n = largest; n >= first; --n) rows.push_back(n);  // planned, the largest first
  for (int64_t n = 1; n < first; ++n) rows.push_back(n);         // past the cap
  rows.push_back(largest + 5);                                   // past the cap and larger: the heap
  for (int64_t n : rows) {
    ASSERT_TRUE(e.same_output(n));
    EXPECT_EQ(e.ctx->arena_bytes(), largest * 64 * 4) << "n=" << n;
  }
}

TEST(MemoryPlan, UnknownSizesStayOnTheHeap) {
  Chain c(4);
  c.in.max_bytes[size_t(c.g.find("v1"))] = -1;
  MemoryPlan p = plan_memory(c.in);
  EXPECT_EQ(p.offset[size_t(c.g.find("v1"))], MemoryPlan::kNotPlanned);
  EXPECT_NE(p.offset[size_t(c.g.find("v0"))], MemoryPlan::kNotPlanned);
}

std::string fixture(const std::string& rel) {
  return (std::filesystem::path(INGOT_SOURCE_DIR) / "tests" / "models" / rel).string();
}

TEST(MemoryPlan, ConcurrentContextsMatchSerialRuns) {
  auto inputs = read_npz(fixture("bert/inputs.npz"));
  ASSERT_TRUE(inputs.has_value());
  EngineOptions eo;
  Profile p;
  for (const auto& [name, t] : *inputs) p.min[name] = p.opt[name] = p.max[name] = t.shape();
  eo.profiles.push_back(p);
  auto e = Engine::load(fixture("bert/model.torchscript.onnx"), eo);
  ASSERT_TRUE(e.has_value()) << e.status().message();
  ASSERT_NE((*e)->memory_plan(), nullptr);
  EXPECT_LT((*e)->memory_plan()->arena_bytes, (*e)->memory_plan()->intermediate_bytes);
  auto serial = (*e)->create_context()->run(*inputs);
  ASSERT_TRUE(serial.has_value()) << serial.status().message();
  const Tensor& want = (*serial)[0].tensor;

  constexpr int kThreads = 4, kRuns = 5;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = (*e)->create_context();
      for (int r = 0; r < kRuns; ++r) {
        auto out = ctx->run(*inputs);
        if (!out || (*out)[0].tensor.shape() != want.shape()) {
          ++mismatches[size_t(t)];
          continue;
        }
        const Tensor& got = (*out)[0].tensor;
        for (int64_t i = 0; i < got.numel(); ++i)
          if (got.data<float>()[i] != want.data<float>()[i]) {
            ++mismatches[size_t(t)];
            break;
          }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
}

}  // namespace
