// run_streams (bench_streams.h).
#include "bench_streams.h"

#include <barrier>
#include <chrono>
#include <mutex>
#include <thread>

namespace ingot::cli {

Expected<StreamBlock> run_streams(const std::vector<std::unique_ptr<ExecutionContext>>& contexts,
                                  const std::map<std::string, Tensor>& inputs, int runs, double idle_ms) {
  using clock = std::chrono::steady_clock;
  const size_t n = contexts.size();
  std::vector<StreamBlock> per(n);
  std::vector<Status> status(n, Status::ok());
  // Every thread is created and waiting before the clock starts, so thread start-up is not timed.
  std::barrier start(std::ptrdiff_t(n + 1));
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t s = 0; s < n; ++s) {
    threads.emplace_back([&, s] {
      start.arrive_and_wait();
      ExecutionContext& ctx = *contexts[s];
      for (int i = 0; i < runs; ++i) {
        if (idle_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(idle_ms));
        const auto t0 = clock::now();
        auto outs = ctx.run(inputs);
        const auto t1 = clock::now();
        if (!outs) {
          if (status[s]) status[s] = outs.status();
          continue;
        }
        per[s].ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (ctx.device()) {
          const DeviceRunTimes dt = ctx.device()->last_run_times();
          per[s].gpu_ms.push_back(dt.compute_ms);
          per[s].h2d_ms.push_back(dt.h2d_ms);
          per[s].d2h_ms.push_back(dt.d2h_ms);
        }
      }
    });
  }
  const auto t0 = clock::now();
  start.arrive_and_wait();
  for (auto& t : threads) t.join();
  StreamBlock all;
  all.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  for (size_t s = 0; s < n; ++s) {
    if (!status[s]) return status[s].with_context("stream " + std::to_string(s + 1) + ": ");
    for (std::vector<double> StreamBlock::*v : {&StreamBlock::ms, &StreamBlock::gpu_ms, &StreamBlock::h2d_ms,
                                                &StreamBlock::d2h_ms})
      (all.*v).insert((all.*v).end(), (per[s].*v).begin(), (per[s].*v).end());
  }
  return all;
}

}  // namespace ingot::cli
