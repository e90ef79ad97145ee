// The static memory plan: lifetimes that do not overlap share bytes, views share their source's
// buffer, graph inputs/outputs stay out of the arena; contexts run concurrently.
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
