// Times a model on ingot's CPU engine, optimized and (with --compare) unoptimized, on random
// inputs of the given shapes, and prints the optimized graph's op counts.
//   conv_bench MODEL.onnx [--shapes name:1x3x224x224,...] [--iters N] [--warmup N] [--compare]
//              [--no-opt] [--threads N]
// Build by hand against a build dir (nothing in CMake):
//   g++ -O2 -std=c++20 -Iinclude -Isrc bench/conv_bench.cc -o build-conv/conv_bench \
//       -Lbuild-conv -lingot -Wl,-rpath,$PWD/build-conv -fopenmp
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <ctime>

#include "runtime/engine.h"

using namespace ingot;

static std::map<std::string, Shape> parse_shapes(const std::string& s) {
  std::map<std::string, Shape> r;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto c = item.rfind(':');
    if (c == std::string::npos) continue;
    Shape sh;
    std::stringstream ds(item.substr(c + 1));
    std::string d;
    while (std::getline(ds, d, 'x')) sh.push_back(std::stoll(d));
    r[item.substr(0, c)] = sh;
  }
  return r;
}

static double time_engine(const std::shared_ptr<Engine>& e, const std::map<std::string, Tensor>& feeds, int warmup,
                          int iters, std::vector<NamedTensor>* out) {
  auto ctx = e->create_context();
  for (int i = 0; i < warmup; ++i) {
    auto r = ctx->run(feeds);
    if (!r) {
      std::fprintf(stderr, "run failed: %s\n", r.status().message().c_str());
      std::exit(1);
    }
    if (out && i == 0) *out = *r;
  }
  // Process CPU time as well: on a shared machine wall time includes waiting for a core.
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  double c0 = cpu_ms();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = ctx->run(feeds);
    auto t1 = std::chrono::steady_clock::now();
    if (!r) std::exit(1);
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  double cpu = (cpu_ms() - c0) / iters;
  std::sort(ms.begin(), ms.end());
  std::printf("  wall: min %.2f ms, median %.2f ms; cpu time %.2f ms per run\n", ms[0], ms[ms.size() / 2], cpu);
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: conv_bench MODEL.onnx [--shapes n:1x3x64x64] [--iters N] [--compare] [--no-opt]\n");
    return 2;
  }
  std::string path = argv[1], shapes;
  int iters = 20, warmup = 3, threads = 0;
  bool compare = false, opt = true;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--shapes" && i + 1 < argc) shapes = argv[++i];
    else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--warmup" && i + 1 < argc) warmup = std::max(1, std::atoi(argv[++i]));
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--compare") compare = true;
    else if (a == "--no-opt") opt = false;
  }
  auto bound = parse_shapes(shapes);
  EngineOptions o;
  o.optimize = opt;
  o.threads = threads;
  if (!bound.empty()) o.shape_bindings = {bound};
  auto t0 = std::chrono::steady_clock::now();
  auto e = Engine::from_onnx(path, o);
  auto t1 = std::chrono::steady_clock::now();
  if (!e) {
    std::fprintf(stderr, "load failed: %s\n", e.status().message().c_str());
    return 1;
  }
  std::map<std::string, int> ops;
  for (const Node& n : (*e)->model().graph.nodes) ops[(n.domain.empty() ? "" : n.domain + ".") + n.op_type]++;
  std::printf("%s: built in %.0f ms; ops:", path.c_str(), std::chrono::duration<double, std::milli>(t1 - t0).count());
  for (auto& [k, v] : ops) std::printf(" %s=%d", k.c_str(), v);
  std::printf("\n");

  std::map<std::string, Tensor> feeds;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (const auto& in : (*e)->inputs()) {
    Shape s;
    auto it = bound.find(in.name);
    if (it != bound.end()) s = it->second;
    else if (in.shape) for (const Dim& dm : *in.shape) s.push_back(dm.known() ? dm.value : 1);
    Tensor t(DType::kFloat32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
    feeds[in.name] = t;
  }
  std::vector<NamedTensor> out_opt, out_ref;
  double ms = time_engine(*e, feeds, warmup, iters, &out_opt);
  std::printf("%s median %.2f ms over %d runs\n", opt ? "optimized" : "unoptimized", ms, iters);
  if (compare) {
    EngineOptions r = o;
    r.optimize = false;
    auto e2 = Engine::from_onnx(path, r);
    if (!e2) return 1;
    double ms2 = time_engine(*e2, feeds, warmup, iters, &out_ref);
    double err = 0;
    for (size_t i = 0; i < out_opt.size(); ++i)
      for (int64_t j = 0; j < out_opt[i].tensor.numel(); ++j)
        err = std::max(err, std::fabs(out_opt[i].tensor.scalar_as_double(j) - out_ref[i].tensor.scalar_as_double(j)));
    std::printf("unoptimized median %.2f ms; speedup %.2fx; max |opt - unopt| = %.3g\n", ms2, ms2 / ms, err);
  }
  return 0;
}
