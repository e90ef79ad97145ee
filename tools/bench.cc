// ingot bench MODEL_OR_ENGINE: latency and throughput, trtexec-like, optionally against ONNX
// Runtime in the same run (--against ort).
//
// Per input shape: warm-up (--warmup-ms), then timed runs until each backend has at least
// --iterations runs and the timed runs (of both backends together) took --duration seconds. With --against ort, ingot and ONNX Runtime
// (a peer process, tools/ort_peer.h) get the identical input tensors and thread count, and run
// in alternating blocks (--block runs of ingot, then --block of ONNX Runtime, repeated) so
// machine noise hits both. Latencies are wall-clock around one synchronous run. --streams N runs
// N contexts of the engine at once (bench_streams.h) and reports their aggregate throughput.
// --idle-time MS (trtexec's --idleTime) sleeps before each timed run: the latency of requests that
// arrive apart, on a GPU whose power limit a back-to-back loop would reach (bench_clocks.h).
//
// A cuda engine made from an ONNX model here is tuned at each shape before it is timed, as
// `ingot build` tunes at a profile's shapes (Engine::tune). On a GPU the SM clock, power and
// what held the clock down are sampled over each shape's timed runs (bench_clocks.h).
//
// Shape sweeps (--batch, --seq): bench_shapes.h.
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench_clocks.h"
#include "bench_shapes.h"
#include "bench_stats.h"
#include "bench_streams.h"
#include "cli_common.h"
#include "io/json_text.h"
#include "io/npy.h"
#include "ort_peer.h"
#include "random_inputs.h"
#include "text/tokenizer.h"
#include "text_inputs.h"
#include "runtime/device.h"
#include "runtime/engine.h"
#include "runtime/parallel.h"

namespace ingot::cli {
namespace {

// bench --help's footer after kBenchShapeRule: what two of the table's columns mean.
constexpr const char* kColumnNotes =
    "samples/s = batch (dim 0 of the first input) x inferences/s. Peak RSS is the process's getrusage\n"
    "high-water mark after the shape (it only grows); RSS delta is that minus the peak before the\n"
    "model was loaded.";

// Idle time before each alternating block: both runtimes' worker threads spin for a while after
// a run (OpenMP's wait policy, ONNX Runtime's thread pool), and on a machine with as many cores
// as threads that spinning would otherwise eat into the other side's first runs.
constexpr std::chrono::milliseconds kSwitchIdle{50};

struct BenchOptions {
  DeviceFlags device;
  std::string model;
  std::string shapes;
  std::string batch, seq;
  double warmup_ms = 200;
  int iterations = 50;
  double duration = 2;
  int threads = 0;
  int block = 10;
  uint64_t seed = 0;
  std::string json;
  std::string against;
  std::string ort_peer = "auto";
  // --text: time tokenization + inference end to end on these texts (one batch).
  std::string tokenizer;
  std::vector<std::string> texts;
  int streams = 1;  // --streams: concurrent execution contexts (bench_streams.h)
  double idle_ms = 0;  // --idle-time: asleep before each timed run, every backend and stream
};

Expected<std::vector<int64_t>> parse_list(const std::string& flag, const std::string& spec) {
  std::vector<int64_t> out;
  std::stringstream in(spec);
  std::string tok;
  while (std::getline(in, tok, ',')) {
    if (tok.empty() || tok.size() > 9 || tok.find_first_not_of("0123456789") != std::string::npos || std::stoll(tok) <= 0) {
      return invalid_argument(flag + ": '" + tok + "' in '" + spec + "' is not a positive integer (expected " + flag +
                              " 1,8,32)");
    }
    out.push_back(std::stoll(tok));
  }
  if (out.empty()) return invalid_argument(flag + ": empty list (expected " + flag + " 1,8,32)");
  return out;
}

std::string shapes_str(const std::vector<IoInfo>& ios, const std::map<std::string, Tensor>& inputs) {
  std::string s;
  for (const auto& io : ios) {
    auto it = inputs.find(io.name);
    if (it == inputs.end()) continue;
    s += (s.empty() ? "" : ",") + io.name + ":" + (it->second.rank() ? shape_str(it->second.shape()) : "scalar");
  }
  return s;
}

std::string read_first_line_with(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      size_t colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  }
  return "";
}

std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out;
  for (char c : all) out += c == '\0' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a.empty() ? "" : a + " " + b + " " + c;
}

// A temporary directory removed (with its files) at scope exit.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/ingot-bench-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data())) path = buf.data();
  }
  std::string file(const std::string& name) {
    files.push_back(path + "/" + name);
    return files.back();
  }
  ~TempDir() {
    for (const auto& f : files) ::unlink(f.c_str());
    if (!path.empty()) ::rmdir(path.c_str());
  }
};

struct Side {
  std::vector<double> ms;
  // --streams N > 1: wall clock of the timed blocks, in which N contexts ran at once; the
  // throughput is runs over that, not the reciprocal of a run's latency.
  int streams = 1;
  double wall_ms = 0;
  bench::LatencyStats stats;
  // Device engines: GPU time of each run, recorded by the graph's first and last nodes (no
  // copies; without a graph, events around the kernels), and of its input and output copies.
  std::vector<double> gpu_ms, h2d_ms, d2h_ms;
  bench::LatencyStats gpu_stats;
  int64_t peak_rss_kb = 0, rss_delta_kb = 0;
  double total_ms() const {
    if (streams > 1) return wall_ms;
    double total = 0;
    for (double v : ms) total += v;
    return total;
  }
  double inferences_per_s() const {
    return streams > 1 ? (wall_ms > 0 ? double(ms.size()) * 1000.0 / wall_ms : 0.0) : bench::per_second(stats.mean);
  }
};

struct ShapeResult : BenchShape {
  std::string label;
  Side ingot, ort;
  std::optional<DeviceClockReport> clocks;  // the GPU's clocks over the timed runs
};

nlohmann::json side_json(const Side& s, int64_t batch) {
  double ips = s.inferences_per_s();
  return {{"count", s.stats.count},
          {"total_ms", s.stats.total},
          {"mean_ms", s.stats.mean},
          {"median_ms", s.stats.median},
          {"p90_ms", s.stats.p90},
          {"p95_ms", s.stats.p95},
          {"p99_ms", s.stats.p99},
          {"min_ms", s.stats.min},
          {"max_ms", s.stats.max},
          {"stddev_ms", s.stats.stddev},
          {"inferences_per_s", ips},
          {"samples_per_s", ips * double(batch)},
          {"peak_rss_kb", s.peak_rss_kb},
          {"rss_delta_kb", s.rss_delta_kb},
          {"streams", s.streams},
          {"wall_ms", s.streams > 1 ? s.wall_ms : s.stats.total},
          {"latencies_ms", s.ms}};
}

nlohmann::json gpu_json(const Side& s) {
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0.0 : t / double(v.size());
  };
  return {{"count", s.gpu_stats.count},      {"mean_ms", s.gpu_stats.mean},     {"median_ms", s.gpu_stats.median},
          {"p90_ms", s.gpu_stats.p90},       {"p95_ms", s.gpu_stats.p95},       {"p99_ms", s.gpu_stats.p99},
          {"min_ms", s.gpu_stats.min},       {"max_ms", s.gpu_stats.max},       {"stddev_ms", s.gpu_stats.stddev},
          {"h2d_mean_ms", mean(s.h2d_ms)},   {"d2h_mean_ms", mean(s.d2h_ms)},   {"gpu_ms", s.gpu_ms}};
}

std::vector<std::string> side_row(const Side& s, int64_t batch) {
  using bench::fixed;
  double ips = s.inferences_per_s();
  return {std::to_string(s.stats.count), fixed(s.stats.mean, 3),   fixed(s.stats.median, 3), fixed(s.stats.p90, 3),
          fixed(s.stats.p95, 3),         fixed(s.stats.p99, 3),    fixed(s.stats.min, 3),    fixed(s.stats.max, 3),
          fixed(s.stats.stddev, 3),      fixed(ips, 1),            fixed(ips * double(batch), 1),
          fixed(double(s.peak_rss_kb) / 1024.0, 1), fixed(double(s.rss_delta_kb) / 1024.0, 1)};
}

int run_bench(const BenchOptions& o) {
  // ---- usage errors first: they need no model
  std::map<std::string, Shape> given;
  if (!o.shapes.empty()) {
    auto s = parse_shapes("--shapes", o.shapes);
    if (!s) return usage_error(s.status().message());
    given = std::move(*s);
  }
  std::vector<int64_t> batches, seqs;
  if (!o.batch.empty()) {
    auto l = parse_list("--batch", o.batch);
    if (!l) return usage_error(l.status().message());
    batches = *l;
  }
  if (!o.seq.empty()) {
    auto l = parse_list("--seq", o.seq);
    if (!l) return usage_error(l.status().message());
    seqs = *l;
  }
  if (!o.against.empty() && o.against != "ort") {
    return usage_error("--against: '" + o.against + "' is not supported (expected --against ort)");
  }
  if (!o.texts.empty() && o.tokenizer.empty()) return usage_error("--text needs --tokenizer tokenizer.json");
  if (!o.texts.empty() && (!o.shapes.empty() || !o.batch.empty() || !o.seq.empty())) {
    return usage_error("--text sets the input shapes itself: drop --shapes/--batch/--seq");
  }
  if (o.streams > 1 && !o.against.empty()) return usage_error("--streams runs ingot alone: drop --against");
  if (o.streams > 1 && !o.texts.empty()) return usage_error("--streams times inference alone: drop --text");

  // ---- the peer before the model: a missing ONNX Runtime is reported at once
  std::unique_ptr<OrtPeer> peer;
  if (!o.against.empty()) {
    auto p = OrtPeer::start(o.ort_peer, "--against ort");
    if (!p) return error(p.status());
    peer = std::move(*p);
  }

  int64_t rss_before_kb = self_max_rss_kb();
  EngineOptions eo;
  eo.threads = o.threads;
  apply_device_flags(o.device, eo);
  auto engine_or = Engine::load(o.model, eo);
  if (!engine_or) return error(engine_or.status());
  std::shared_ptr<Engine> engine = *engine_or;
  const std::string& mpath = o.model;
  // ONNX Runtime runs the ONNX model: for an engine file, the one it was built from.
  std::string peer_model;
  if (peer) {
    auto m = ort_model_for(mpath, engine->source_model());
    if (!m) return error(m.status());
    peer_model = *m;
  }
  const int threads = o.threads > 0 ? o.threads : num_threads();
  int64_t rss_loaded_kb = self_max_rss_kb();

  // --text: the tokenized batch fixes the shapes; each timed ingot run tokenizes again.
  std::unique_ptr<text::Tokenizer> tokenizer;
  if (!o.texts.empty()) {
    auto tok = text::Tokenizer::from_file(o.tokenizer);
    if (!tok) return error(tok.status());
    tokenizer = std::move(*tok);
    auto first = make_text_inputs(*engine, *tokenizer, o.texts, {}, std::nullopt);
    if (!first) return error(first.status());
    for (const auto& [name, t] : *first) given[name] = t.shape();
    note("--text: timing tokenization of " + std::to_string(o.texts.size()) +
         " text(s) + inference per ingot run" + (o.against.empty() ? "" : "; ONNX Runtime runs on the same ids (no tokenizer)"));
  }

  std::set<std::string> noted;
  auto shape_list = bench_shapes(*engine, mpath, given, batches, seqs, note);
  if (!shape_list) return error(shape_list.status());
  std::vector<ShapeResult> results;
  for (BenchShape& b : shape_list->each) {
    ShapeResult r;
    static_cast<BenchShape&>(r) = std::move(b);
    results.push_back(std::move(r));
  }

  // ---- header: what runs, where
  std::string cpu = read_first_line_with("/proc/cpuinfo", "model name");
  struct utsname un;
  std::string kernel = ::uname(&un) == 0 ? std::string(un.sysname) + " " + un.release : "";
  unsigned cores = std::thread::hardware_concurrency();
  std::string load = load_average();
  std::cout << "model     " << mpath << "\n";
  std::cout << "ingot     " << INGOT_VERSION << ", " << threads << " thread(s), optimizer on\n";
  if (const RetypedIo& r = engine->options().retyped_io; !r.inputs.empty() || !r.outputs.empty()) {
    std::cout << "io        float16 where the model has float32 (--io-precision fp16):";
    for (const auto* names : {&r.inputs, &r.outputs})
      for (const std::string& n : *names) std::cout << " " << n;
    std::cout << (peer ? "; ONNX Runtime gets the model's float32 inputs" : "") << "\n";
  }
  if (peer) {
    std::cout << "against   " << peer->description() << ", intra-op threads " << threads
              << ", inter-op 1, graph optimization all, sequential"
              << (peer_model != mpath ? ", on " + peer_model + " (the engine's source model)" : std::string());
    if (peer->kind() == "node") {
      std::cout << "; latencies include an empty-await overhead of " << bench::fixed(peer->await_overhead_ms(), 4)
                << " ms (median)";
    }
    std::cout << "\n";
  }
  std::cout << "machine   " << (cpu.empty() ? "unknown CPU" : cpu) << ", " << cores << " logical cores, " << kernel
            << ", load average " << load << " at start\n";
  if (std::string n = cpu_bf16_note(engine->options().device, engine->options().precision); !n.empty()) note(n);
  std::cout << "timing    warm-up " << o.warmup_ms << " ms per backend; then at least " << o.iterations
            << " runs per backend and " << o.duration << " s of timed runs"
            << (peer ? " (both together), alternating blocks of " + std::to_string(o.block) + " (ingot, ORT), " +
                           std::to_string(kSwitchIdle.count()) + " ms idle before each"
                     : "")
            << (o.idle_ms > 0 ? "; " + bench::fixed(o.idle_ms, 3) + " ms idle before each timed run (--idle-time, not counted in --duration)"
                              : std::string())
            << "\n";
  if (o.streams > 1) {
    std::cout << "streams   " << o.streams << " execution contexts run at once, a host thread each"
              << (engine->device() ? " and a CUDA stream each" : "")
              << "; latencies are each run's own, inf/s and samples/s the aggregate over the blocks' wall clock\n";
  }
  std::cout << "command   " << command_line() << "\n";

  // ---- measure
  TempDir tmp;
  if (peer) {
    if (tmp.path.empty()) return error("--against ort: cannot create a temporary directory");
    Status st = peer->load(peer_model, threads);
    if (!st) return error(st);
  }
  std::vector<std::unique_ptr<ExecutionContext>> contexts;
  for (int i = 0; i < o.streams; ++i) contexts.push_back(engine->create_context());
  ExecutionContext* ctx = contexts.front().get();
  using clock = std::chrono::steady_clock;
  const DeviceBackend* clock_backend = engine->device() ? find_device_backend(engine->options().device) : nullptr;
  for (size_t k = 0; k < results.size(); ++k) {
    ShapeResult& r = results[k];
    std::map<std::string, Tensor> inputs;
    std::map<std::string, std::string> sources;
    if (tokenizer) {
      auto enc = make_text_inputs(*engine, *tokenizer, o.texts, {}, std::nullopt);
      if (!enc) return error(enc.status());
      inputs = std::move(*enc);
    } else {
      Status made = add_random_inputs(*engine, r.shapes, o.seed, inputs, sources, [&](const std::string& m) {
        if (noted.insert(m).second) note(m);
      });
      if (!made) return error(made);
    }
    Status valid = engine->validate_inputs(inputs);
    if (!valid) return error(valid);
    r.label = shapes_str(engine->inputs(), inputs);
    for (const auto& [name, t] : inputs) r.shapes[name] = t.shape();
    std::cout << "shape " << (k + 1) << "   " << r.label << std::endl;
    // A cuda engine made here from an ONNX model is tuned at the shape first, as `ingot build`
    // tunes an engine at its profiles' shapes, so that bench times what a built engine runs.
    if (engine->device() && !engine->options().from_engine_file) {
      const auto t0 = clock::now();
      Status tuned = engine->tune(inputs);
      if (!tuned) return error(tuned);
      note("tuned at this shape in " + bench::fixed(std::chrono::duration<double>(clock::now() - t0).count(), 2) +
           " s, as ingot build tunes an engine");
    }

    r.ingot.streams = o.streams;
    auto run_ingot = [&](int n, std::vector<double>* out) -> Status {
      if (o.streams > 1) {  // n runs on each context, all at once
        auto block = run_streams(contexts, inputs, n, out ? o.idle_ms : 0.0);
        if (!block) return block.status();
        if (!out) return Status::ok();
        out->insert(out->end(), block->ms.begin(), block->ms.end());
        r.ingot.wall_ms += block->wall_ms;
        r.ingot.gpu_ms.insert(r.ingot.gpu_ms.end(), block->gpu_ms.begin(), block->gpu_ms.end());
        r.ingot.h2d_ms.insert(r.ingot.h2d_ms.end(), block->h2d_ms.begin(), block->h2d_ms.end());
        r.ingot.d2h_ms.insert(r.ingot.d2h_ms.end(), block->d2h_ms.begin(), block->d2h_ms.end());
        return Status::ok();
      }
      for (int i = 0; i < n; ++i) {
        if (out && o.idle_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.idle_ms));
        auto t0 = clock::now();
        if (tokenizer) {
          auto enc = make_text_inputs(*engine, *tokenizer, o.texts, {}, std::nullopt);
          if (!enc) return enc.status();
          inputs = std::move(*enc);
        }
        auto outs = ctx->run(inputs);
        auto t1 = clock::now();
        if (!outs) return outs.status();
        if (out) out->push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (out && ctx->device()) {
          DeviceRunTimes dt = ctx->device()->last_run_times();
          r.ingot.gpu_ms.push_back(dt.compute_ms);
          r.ingot.h2d_ms.push_back(dt.h2d_ms);
          r.ingot.d2h_ms.push_back(dt.d2h_ms);
        }
      }
      return Status::ok();
    };
    auto run_ort = [&](int n, std::vector<double>* out) -> Status {
      auto t = peer->run(n, out ? o.idle_ms : 0.0);
      if (!t) return t.status();
      if (out) out->insert(out->end(), t->begin(), t->end());
      return Status::ok();
    };
    if (peer) {
      std::string npz = tmp.file("inputs_" + std::to_string(k) + ".npz");
      Status st = write_npz(npz, inputs_as_model_declares(*engine, inputs));
      if (!st) return error(st);
      st = peer->set_inputs(npz);
      if (!st) return error(st);
    }
    // --streams: each context's first run of a shape one after another, so what a first run sets
    // up (on CUDA: the GEMM algorithms timed on an idle device, the graph capture) is not timed
    // against the other streams' work.
    if (o.streams > 1) {
      for (const auto& c : contexts) {
        auto outs = c->run(inputs);
        if (!outs) return error(outs.status());
      }
    }
    // Warm-up: at least one run each (unless --warmup-ms 0), until the time is spent.
    for (int side = 0; side < (peer ? 2 : 1); ++side) {
      if (o.warmup_ms <= 0) break;
      auto start = clock::now();
      do {
        Status st = side == 0 ? run_ingot(1, nullptr) : run_ort(1, nullptr);
        if (!st) return error(st);
      } while (std::chrono::duration<double, std::milli>(clock::now() - start).count() < o.warmup_ms);
    }
    // Timed blocks, alternating.
    // Done when each backend has --iterations runs and the timed runs of both together took
    // --duration: the same number of runs each, and a bounded time even when one is much slower.
    auto done = [&] {
      bool counts = int(r.ingot.ms.size()) >= o.iterations && (!peer || int(r.ort.ms.size()) >= o.iterations);
      return counts && r.ingot.total_ms() + (peer ? r.ort.total_ms() : 0.0) >= o.duration * 1000.0;
    };
    // The GPU's clocks over the timed runs: at its power limit a GPU runs as fast as the energy a
    // run takes allows, and a reader of the times needs to know that (bench_clocks.h).
    std::unique_ptr<DeviceClockMonitor> monitor;
    if (clock_backend) {
      auto m = clock_backend->monitor_clocks();
      if (m) {
        monitor = std::move(*m);
      } else if (const std::string why = "GPU clocks not monitored: " + m.status().message(); noted.insert(why).second) {
        note(why);
      }
    }
    while (!done()) {
      auto block_for = [&](const Side& s) {
        int have = int(s.ms.size());
        return have < o.iterations ? std::min(o.block, o.iterations - have) : o.block;
      };
      int n = block_for(r.ingot);
      if (peer) n = std::min(n, block_for(r.ort));
      if (peer) std::this_thread::sleep_for(kSwitchIdle);
      Status st = run_ingot(n, &r.ingot.ms);
      if (!st) return error(st);
      if (peer) {
        std::this_thread::sleep_for(kSwitchIdle);
        st = run_ort(n, &r.ort.ms);
        if (!st) return error(st);
      }
    }
    if (monitor) r.clocks = monitor->stop();
    r.ingot.stats = bench::summarize(r.ingot.ms);
    if (!r.ingot.gpu_ms.empty()) r.ingot.gpu_stats = bench::summarize(r.ingot.gpu_ms);
    r.ingot.peak_rss_kb = self_max_rss_kb();
    r.ingot.rss_delta_kb = r.ingot.peak_rss_kb - rss_before_kb;
    if (peer) {
      r.ort.stats = bench::summarize(r.ort.ms);
      auto rss = peer->max_rss_kb();
      if (!rss) return error(rss.status());
      r.ort.peak_rss_kb = *rss;
      r.ort.rss_delta_kb = *rss - peer->baseline_rss_kb();
    }
  }

  // ---- table
  bool by_dims = shape_list->has_batch_dim || shape_list->has_seq_dim;
  std::vector<std::string> header;
  std::vector<bool> right;
  if (by_dims) {
    header = {"batch", "seq"};
    right = {true, true};
  } else {
    header = {"shapes"};
    right = {false};
  }
  for (const char* h : {"backend", "runs", "mean ms", "median ms", "p90 ms", "p95 ms", "p99 ms", "min ms", "max ms",
                        "stddev ms", "inf/s", "samples/s", "peak RSS MiB", "RSS delta MiB"}) {
    header.push_back(h);
    right.push_back(std::string(h) != "backend");
  }
  std::vector<std::vector<std::string>> rows, ratio_rows;
  for (const ShapeResult& r : results) {
    std::vector<std::string> lead = by_dims ? std::vector<std::string>{std::to_string(r.batch), r.seq >= 0 ? std::to_string(r.seq) : "-"}
                                            : std::vector<std::string>{r.label};
    auto add = [&](const std::string& backend, const Side& s) {
      std::vector<std::string> row = lead;
      row.push_back(backend);
      for (auto& c : side_row(s, r.batch)) row.push_back(c);
      rows.push_back(row);
    };
    add("ingot", r.ingot);
    if (peer) {
      add("ORT", r.ort);
      std::vector<std::string> rr = lead;
      rr.push_back(bench::fixed(r.ingot.stats.median, 3));
      rr.push_back(bench::fixed(r.ort.stats.median, 3));
      rr.push_back(bench::fixed(r.ingot.stats.median / r.ort.stats.median, 2));
      ratio_rows.push_back(rr);
    }
  }
  std::cout << "\n" << bench::markdown_table(header, right, rows);
  if (peer) {
    std::vector<std::string> h2 = by_dims ? std::vector<std::string>{"batch", "seq"} : std::vector<std::string>{"shapes"};
    std::vector<bool> r2(h2.size(), by_dims);
    for (const char* h : {"ingot median ms", "ORT median ms", "ingot/ORT"}) {
      h2.push_back(h);
      r2.push_back(true);
    }
    std::cout << "\n" << bench::markdown_table(h2, r2, ratio_rows);
    std::cout << "ingot/ORT is the ratio of medians: below 1 means ingot is faster.\n";
  }
  if (engine->device()) {
    // trtexec's split: GPU compute (CUDA events the replayed graph records) against the host's
    // end-to-end latency, which adds the input/output copies and the host work.
    std::vector<std::string> h3 = by_dims ? std::vector<std::string>{"batch", "seq"} : std::vector<std::string>{"shapes"};
    std::vector<bool> r3(h3.size(), by_dims);
    for (const char* h : {"GPU compute median ms", "mean ms", "p90 ms", "p99 ms", "min ms", "max ms", "H2D mean ms",
                          "D2H mean ms", "end-to-end median ms"}) {
      h3.push_back(h);
      r3.push_back(true);
    }
    std::vector<std::vector<std::string>> gpu_rows;
    for (const ShapeResult& r : results) {
      std::vector<std::string> row = by_dims ? std::vector<std::string>{std::to_string(r.batch), r.seq >= 0 ? std::to_string(r.seq) : "-"}
                                             : std::vector<std::string>{r.label};
      const Side& s = r.ingot;
      auto mean = [](const std::vector<double>& v) {
        double t = 0;
        for (double x : v) t += x;
        return v.empty() ? 0.0 : t / double(v.size());
      };
      for (double v : {s.gpu_stats.median, s.gpu_stats.mean, s.gpu_stats.p90, s.gpu_stats.p99, s.gpu_stats.min,
                       s.gpu_stats.max, mean(s.h2d_ms), mean(s.d2h_ms), s.stats.median})
        row.push_back(bench::fixed(v, 4));
      gpu_rows.push_back(row);
    }
    std::cout << "\n" << bench::markdown_table(h3, r3, gpu_rows);
    const auto& d = *engine->device_properties();
    std::cout << "GPU " << d.name << " (compute capability " << d.compute_capability << ", CUDA runtime "
              << d.runtime_version << "); CUDA graphs " << (engine->options().cuda_graph ? "on" : "off") << "\n";
    std::cout << "device memory: " << describe_device_memory(*engine, ctx) << (o.streams > 1 ? " (one context of " + std::to_string(o.streams) + ")" : "") << "\n";
    bool capped = false;
    for (size_t k = 0; k < results.size(); ++k) {
      if (!results[k].clocks) continue;
      std::cout << "GPU clocks, shape " << (k + 1) << ": " << bench::describe_clocks(*results[k].clocks, results[k].ingot.ms.size()) << "\n";
      capped = capped || bench::power_capped(*results[k].clocks);
    }
    if (capped)
      note("the GPU ran at its power limit: its clock, and so these times, follow the energy a run takes and the "
           "board's temperature (another board of the same model, or this one warmer, can differ by a few percent); "
           "--idle-time 2 times runs that arrive apart, at the full clock");
  }
  std::cout << "load average " << load_average() << " at end\n";

  // ---- JSON
  if (!o.json.empty()) {
    nlohmann::json j;
    j["model"] = mpath;
    j["command"] = command_line();
    j["machine"] = {{"cpu", cpu}, {"logical_cores", cores}, {"kernel", kernel}, {"load_average_start", load},
                    {"load_average_end", load_average()}};
    j["ingot"] = {{"version", INGOT_VERSION}, {"threads", threads}, {"optimize", true},
                  {"device", engine->options().device}, {"precision", engine->options().precision}};
    if (const auto& d = engine->device_properties()) {
      DeviceMemoryReport m = engine->device()->memory();
      if (ctx->device()) {
        DeviceMemoryReport c = ctx->device()->memory();
        m.arena = c.arena;
        m.workspace = c.workspace;
        m.io = c.io;
      }
      j["device"] = {{"name", d->name}, {"compute_capability", d->compute_capability},
                     {"cuda_runtime", d->runtime_version}, {"driver_cuda", d->driver_version},
                     {"cuda_graph", engine->options().cuda_graph},
                     {"memory_bytes", {{"weights", m.weights}, {"arena", m.arena}, {"workspace", m.workspace},
                                       {"io", m.io}, {"total", m.total()}}}};
    }
    if (peer) {
      j["against"] = {{"runtime", peer->description()}, {"version", peer->version()}, {"peer", peer->kind()},
                      {"intra_op_threads", threads}, {"inter_op_threads", 1}, {"graph_optimization", "all"},
                      {"await_overhead_ms", peer->await_overhead_ms()}, {"baseline_rss_kb", peer->baseline_rss_kb()}};
    } else {
      j["against"] = nullptr;
    }
    j["settings"] = {{"warmup_ms", o.warmup_ms}, {"iterations", o.iterations}, {"duration_s", o.duration},
                     {"block", o.block}, {"seed", o.seed}, {"threads", threads}, {"streams", o.streams},
                     {"idle_time_ms", o.idle_ms}};
    j["memory"] = {{"rss_before_load_kb", rss_before_kb}, {"rss_after_load_kb", rss_loaded_kb}};
    j["results"] = nlohmann::json::array();
    for (const ShapeResult& r : results) {
      nlohmann::json e;
      nlohmann::json shapes = nlohmann::json::object();
      for (const auto& [n, s] : r.shapes) shapes[n] = s;
      e["shapes"] = shapes;
      e["label"] = r.label;
      e["batch"] = r.batch;
      e["seq"] = r.seq >= 0 ? nlohmann::json(r.seq) : nlohmann::json(nullptr);
      e["ingot"] = side_json(r.ingot, r.batch);
      if (!r.ingot.gpu_ms.empty()) e["ingot"]["gpu_compute"] = gpu_json(r.ingot);
      if (r.clocks) e["ingot"]["gpu_clocks"] = bench::clocks_json(*r.clocks, r.ingot.ms.size());
      if (peer) {
        e["ort"] = side_json(r.ort, r.batch);
        e["ratio_median"] = r.ingot.stats.median / r.ort.stats.median;
      }
      j["results"].push_back(e);
    }
    std::ofstream f(o.json);
    if (!f) return error(o.json + ": cannot open for writing");
    f << json_text(j, 2) << "\n";
    if (!f) return error(o.json + ": write failed");
    std::cout << "wrote " << o.json << "\n";
  }
  return kExitOk;
}

}  // namespace

Command setup_bench(CLI::App& parent) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = parent.add_subcommand(
      "bench", "measure latency and throughput (trtexec-like), optionally against ONNX Runtime in the same run");
  app->add_option("model", o->model, "ONNX model or ingot engine file")->required();
  app->add_option("--shapes", o->shapes, "input shapes, e.g. input_ids:1x128,attention_mask:1x128")->type_name("SPEC");
  app->add_option("--batch", o->batch, "sweep batch sizes (dim 0), e.g. 1,8,32")->type_name("LIST");
  app->add_option("--seq", o->seq, "sweep sequence lengths (dim 1 of token inputs), e.g. 12,128")->type_name("LIST");
  app->add_option("--warmup-ms", o->warmup_ms, "warm-up time per shape and backend (default 200)")
      ->check(CLI::Range(0.0, 1e7));
  app->add_option("--iterations", o->iterations, "minimum timed runs per shape and backend (default 50)")
      ->check(CLI::Range(1, 100000000));
  app->add_option("--duration", o->duration, "minimum seconds of timed runs per shape, both backends together with --against (default 2)")
      ->check(CLI::Range(0.0, 1e6));
  add_device_flags(app, o->device);
  app->add_option("--threads", o->threads, "CPU threads, for ingot and ONNX Runtime's intra-op pool (0: all cores)")
      ->check(CLI::Range(0, 65536));
  app->add_option("--block", o->block, "runs per block when alternating with --against (default 10)")
      ->check(CLI::Range(1, 1000000));
  app->add_option("--seed", o->seed, "seed of the random inputs (as ingot run)");
  app->add_option("--json", o->json, "write every number (and the raw latencies) to a JSON file")->type_name("FILE");
  app->add_option("--against", o->against,
                  "also run ONNX Runtime (python3 onnxruntime or node onnxruntime-node) on the same inputs, "
                  "alternating blocks")
      ->type_name("ort");
  app->add_option("--tokenizer", o->tokenizer, "tokenizer.json (or vocab.txt) for --text")->type_name("FILE");
  app->add_option("--text", o->texts, "time tokenization + inference on this text (repeat for a batch)");
  app->add_option("--streams", o->streams,
                  "run N execution contexts at once, a thread (and CUDA stream) each, as concurrent requests "
                  "would; inf/s is their aggregate (default 1)")
      ->check(CLI::Range(1, 256));
  app->add_option("--idle-time", o->idle_ms,
                  "milliseconds asleep before each timed run, on every backend and stream (trtexec's --idleTime; "
                  "default 0: back to back). Not counted in --duration. What it answers: the latency of requests "
                  "that arrive apart, on a GPU whose clock a back-to-back loop would hold at its power limit")
      ->type_name("MS")
      ->check(CLI::Range(0.0, 60000.0));
  app->add_option("--ort-peer", o->ort_peer, "which ONNX Runtime peer: auto (python first), python, node")
      ->check(CLI::IsMember({"auto", "python", "node"}));
  app->footer(std::string(kBenchShapeRule) + "\n" + kColumnNotes);
  return Command{app, [o] { return run_bench(*o); }};
}

}  // namespace ingot::cli
