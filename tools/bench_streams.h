// `ingot bench --streams N` (trtexec's --streams): N execution contexts of one engine, each on
// its own host thread (and, on CUDA, its own stream), running the same inputs at the same time.
// What it answers: the throughput of a device shared by concurrent requests, e.g. whether two
// batches of 16 in flight together beat one batch of 32, and how much a run's latency grows
// when others share the device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "runtime/engine.h"

namespace ingot::cli {

// Per-run measurements of one block of concurrent runs, every stream's runs together.
struct StreamBlock {
  std::vector<double> ms;                      // wall clock around each run, on its own thread
  std::vector<double> gpu_ms, h2d_ms, d2h_ms;  // device engines: each run's CUDA event times
  double wall_ms = 0;                          // from the first run's start to the last run's end
};

// Starts every context's `runs` runs at once (a thread each, released together) and waits for
// all; each thread sleeps idle_ms before each of its runs (--idle-time). The first error of any
// run is returned (the others still finish their runs).
Expected<StreamBlock> run_streams(const std::vector<std::unique_ptr<ExecutionContext>>& contexts,
                                  const std::map<std::string, Tensor>& inputs, int runs, double idle_ms = 0);

}  // namespace ingot::cli
