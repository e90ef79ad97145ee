// ingot run MODEL: runs a model once on given or random inputs and prints/saves the outputs.
//   --inputs IN.npz, --input name=FILE.npy: given inputs (keys/names are input names)
//   --shapes name:1x128,...: shapes of the random inputs (trtexec's spelling)
//   --save-outputs OUT.npz: outputs keyed by output name
// Random inputs are chosen to be valid for typical models: integer inputs that feed a Gather
// (an embedding lookup) stay below the table size, "mask" inputs are ones, "token_type" zeros,
// "position" an arange.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <set>

#include "cli_common.h"
#include "io/npy.h"
#include "ir/dispatch.h"
#include "runtime/engine.h"

namespace ingot::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string inputs_npz;
  std::vector<std::string> input_files;
  std::string shapes;
  std::string save_outputs;
  int threads = 0;
  uint64_t seed = 0;
};

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string input_list(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& i : ios) s += (s.empty() ? "" : ", ") + i.name;
  return s.empty() ? "none" : s;
}

// The smallest table size of the Gathers that `input` indexes, following the value through
// shape-only ops (Cast, Unsqueeze, Reshape, Expand, ...). -1 when it feeds no Gather.
int64_t gather_bound(const Graph& g, ValueId input) {
  static const std::set<std::string> kPassThrough = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand",
                                                     "Identity", "Flatten", "Transpose"};
  std::map<ValueId, std::vector<std::pair<const Node*, size_t>>> consumers;
  for (const Node& n : g.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != kNoValue) consumers[n.inputs[i]].push_back({&n, i});
    }
  }
  int64_t bound = -1;
  std::vector<ValueId> work = {input};
  std::set<ValueId> seen = {input};
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    auto it = consumers.find(v);
    if (it == consumers.end()) continue;
    for (const auto& [n, slot] : it->second) {
      if (n->domain.empty() && kPassThrough.count(n->op_type) && slot == 0) {
        for (ValueId o : n->outputs) {
          if (o != kNoValue && seen.insert(o).second) work.push_back(o);
        }
      } else if (n->domain.empty() && n->op_type == "Gather" && slot == 1 && !n->inputs.empty()) {
        ValueId data = n->inputs[0];
        Shape dshape;
        auto init = g.initializers.find(data);
        if (init != g.initializers.end()) {
          dshape = init->second.shape();
        } else if (g.value(data).shape) {
          bool all_known = true;
          for (const Dim& d : *g.value(data).shape) {
            all_known = all_known && d.known();
            dshape.push_back(d.value);
          }
          if (!all_known) continue;
        } else {
          continue;
        }
        int64_t axis = n->attrs.get_int("axis", 0);
        if (axis < 0) axis += int64_t(dshape.size());
        if (axis < 0 || axis >= int64_t(dshape.size())) continue;
        int64_t size = dshape[size_t(axis)];
        if (size > 0) bound = bound < 0 ? size : std::min(bound, size);
      }
    }
  }
  return bound;
}

// Fills t from a double per element.
template <class F>
void fill(Tensor& t, F&& value_at) {
  if (t.dtype() == DType::kBool) {
    auto* d = t.data<bool>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = value_at(i) != 0;
    return;
  }
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = T(value_at(i));
  });
}

// Makes a random input; returns a description of what was drawn.
std::string make_random(const Graph& g, const IoInfo& io, Tensor& t, std::mt19937_64& rng) {
  std::string name = lower(io.name);
  if (name.find("mask") != std::string::npos) {
    fill(t, [](int64_t) { return 1.0; });
    return "ones (a mask)";
  }
  if (t.dtype() == DType::kBool) {
    fill(t, [](int64_t) { return 1.0; });
    return "all true";
  }
  if (dtype_is_integer(t.dtype())) {
    if (name.find("token_type") != std::string::npos) {
      fill(t, [](int64_t) { return 0.0; });
      return "zeros (token types)";
    }
    if (name.find("position") != std::string::npos) {
      int64_t last = t.rank() ? std::max<int64_t>(t.shape().back(), 1) : 1;
      fill(t, [&](int64_t i) { return double(i % last); });
      return "arange along the last axis (positions)";
    }
    ValueId id = g.find(io.name);
    int64_t bound = id == kNoValue ? -1 : gather_bound(g, id);
    std::string why = bound > 0 ? " (indices of a Gather over " + std::to_string(bound) + " rows)" : "";
    if (bound <= 0) bound = 100;
    if (t.dtype() == DType::kInt8) bound = std::min<int64_t>(bound, 128);
    std::uniform_int_distribution<int64_t> dist(0, bound - 1);
    fill(t, [&](int64_t) { return double(dist(rng)); });
    return "random integers in [0, " + std::to_string(bound) + ")" + why;
  }
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  fill(t, [&](int64_t) { return dist(rng); });
  return "random uniform [-1, 1)";
}

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void print_output(const std::string& name, const Tensor& t) {
  std::cout << "output '" << name << "'  " << dtype_name(t.dtype()) << "  [" << shape_str(t.shape()) << "]\n";
  if (!dtype_is_supported(t.dtype()) || t.numel() == 0) {
    if (t.numel() == 0) std::cout << "  (empty)\n";
    return;
  }
  std::cout << "  values:";
  int64_t n = std::min<int64_t>(t.numel(), 8);
  for (int64_t i = 0; i < n; ++i) std::cout << (i ? ", " : " ") << fmt_num(t.scalar_as_double(i));
  if (t.numel() > n) std::cout << ", ...";
  std::cout << "\n";
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  int64_t nan = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.scalar_as_double(i);
    if (std::isnan(v)) { ++nan; continue; }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  int64_t counted = t.numel() - nan;
  std::cout << "  min " << fmt_num(counted ? mn : NAN) << "  max " << fmt_num(counted ? mx : NAN) << "  mean "
            << fmt_num(counted ? sum / double(counted) : NAN);
  if (nan) std::cout << "  (" << nan << " NaN)";
  std::cout << "\n";
}

int run_run(const RunOptions& o) {
  // Usage errors first: they need no model.
  std::map<std::string, Shape> shapes;
  if (!o.shapes.empty()) {
    auto s = parse_shapes("--shapes", o.shapes);
    if (!s) return usage_error(s.status().message());
    shapes = std::move(*s);
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& spec : o.input_files) {
    auto f = parse_name_eq_file("--input", spec);
    if (!f) return usage_error(f.status().message());
    files.push_back(*f);
  }

  EngineOptions eo;
  eo.threads = o.threads;
  auto engine_or = Engine::from_onnx(o.model, eo);
  if (!engine_or) return error(engine_or.status());
  std::shared_ptr<Engine> engine = *engine_or;
  const Graph& g = engine->model().graph;
  const std::string& mpath = engine->model().path;

  std::map<std::string, Tensor> inputs;
  std::map<std::string, std::string> sources;
  if (!o.inputs_npz.empty()) {
    auto z = read_npz(o.inputs_npz);
    if (!z) return error(z.status());
    for (auto& [k, t] : *z) {
      if (!engine->find_input(k)) {
        return error(o.inputs_npz + ": array '" + k + "' is not an input of " + mpath + " (its inputs: " +
                     input_list(engine->inputs()) + ")");
      }
      inputs[k] = t;
      sources[k] = o.inputs_npz;
    }
  }
  for (const auto& [name, file] : files) {
    if (!engine->find_input(name)) {
      return error("--input " + name + "=" + file + ": " + mpath + " has no input '" + name + "' (its inputs: " +
                   input_list(engine->inputs()) + ")");
    }
    auto t = read_npy(file);
    if (!t) return error(t.status());
    if (sources.count(name)) note("input '" + name + "' from " + file + " replaces the one from " + sources[name]);
    inputs[name] = *t;
    sources[name] = file;
  }
  for (const auto& [name, s] : shapes) {
    const IoInfo* io = engine->find_input(name);
    if (!io) {
      return error("--shapes: " + mpath + " has no input '" + name + "' (its inputs: " + input_list(engine->inputs()) + ")");
    }
    if (io->shape && io->shape->size() != s.size()) {
      return error("--shapes: input '" + name + "' of " + mpath + " has rank " + std::to_string(io->shape->size()) + " " +
                   sym_shape_str(*io->shape) + ", but --shapes gives " + shape_str(s));
    }
  }

  // Symbolic dims already fixed by given tensors or --shapes.
  std::map<std::string, int64_t> symbols;
  auto learn = [&](const IoInfo& io, const Shape& s) {
    if (!io.shape || io.shape->size() != s.size()) return;
    for (size_t d = 0; d < s.size(); ++d) {
      const Dim& dim = (*io.shape)[d];
      if (!dim.known() && !dim.symbol.empty()) symbols.emplace(dim.symbol, s[d]);
    }
  };
  for (const auto& io : engine->inputs()) {
    auto it = inputs.find(io.name);
    if (it != inputs.end()) learn(io, it->second.shape());
  }
  for (const auto& io : engine->inputs()) {
    auto it = shapes.find(io.name);
    if (it != shapes.end() && !inputs.count(io.name)) learn(io, it->second);
  }

  std::mt19937_64 rng(o.seed);
  std::set<std::string> noted;
  for (const auto& io : engine->inputs()) {
    if (inputs.count(io.name)) {
      if (shapes.count(io.name)) note("input '" + io.name + "' is given by a file; its --shapes entry is ignored");
      continue;
    }
    Shape shape;
    if (auto it = shapes.find(io.name); it != shapes.end()) {
      shape = it->second;
    } else if (!io.shape) {
      return error(mpath + ": input '" + io.name + "' has no declared shape; give its shape with --shapes " + io.name +
                   ":DIMS or its value with --input " + io.name + "=FILE.npy");
    } else {
      for (size_t d = 0; d < io.shape->size(); ++d) {
        const Dim& dim = (*io.shape)[d];
        if (dim.known()) {
          shape.push_back(dim.value);
        } else if (!dim.symbol.empty()) {
          auto [it, fresh] = symbols.emplace(dim.symbol, 1);
          if (fresh && noted.insert(dim.symbol).second) {
            note("'" + dim.symbol + "' unset, using 1; set with --shapes " + io.name + ":...");
          }
          shape.push_back(it->second);
        } else {
          note("input '" + io.name + "' dimension " + std::to_string(d) + " is unnamed and unknown, using 1; set with --shapes");
          shape.push_back(1);
        }
      }
    }
    if (io.dtype == DType::kUndefined || !dtype_is_supported(io.dtype)) {
      return error(mpath + ": input '" + io.name + "' has " +
                   (io.dtype == DType::kUndefined ? std::string("no declared dtype") : "dtype " + dtype_name(io.dtype)) +
                   ", ingot cannot make a random value for it; give it with --input " + io.name + "=FILE.npy");
    }
    Tensor t(io.dtype, shape);
    sources[io.name] = make_random(g, io, t, rng);
    inputs[io.name] = t;
  }

  Status valid = engine->validate_inputs(inputs);
  if (!valid) return error(valid);
  for (const auto& io : engine->inputs()) {
    const Tensor& t = inputs[io.name];
    std::cout << "input '" << io.name << "'  " << dtype_name(t.dtype()) << "  [" << shape_str(t.shape()) << "]  "
              << sources[io.name] << "\n";
  }

  auto ctx = engine->create_context();
  auto t0 = std::chrono::steady_clock::now();
  auto outs = ctx->run(inputs);
  auto t1 = std::chrono::steady_clock::now();
  if (!outs) return error(outs.status());
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", std::chrono::duration<double, std::milli>(t1 - t0).count());
  std::cout << "ran in " << ms << " ms (one run, not a benchmark: see ingot bench)\n";
  for (const auto& nt : *outs) print_output(nt.name, nt.tensor);

  if (!o.save_outputs.empty()) {
    std::vector<std::pair<std::string, Tensor>> save;
    for (const auto& nt : *outs) {
      if (nt.tensor.dtype() == DType::kBFloat16) note("output '" + nt.name + "' is bfloat16; saved as float32");
      save.push_back({nt.name, nt.tensor});
    }
    Status st = write_npz(o.save_outputs, save);
    if (!st) return error(st);
    std::cout << "saved " << save.size() << " output(s) to " << o.save_outputs << "\n";
  }
  return kExitOk;
}

}  // namespace

Command setup_run(CLI::App& parent) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* app = parent.add_subcommand("run", "run a model once on given or random inputs; print and save the outputs");
  app->add_option("model", o->model, "ONNX model file")->required();
  app->add_option("--inputs", o->inputs_npz, "inputs from an .npz file (keys are input names)")->type_name("IN.npz");
  app->add_option("--input", o->input_files, "one input from an .npy file (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--shapes", o->shapes, "shapes of random inputs, e.g. input_ids:1x128,attention_mask:1x128")
      ->type_name("SPEC");
  app->add_option("--save-outputs", o->save_outputs, "write the outputs to an .npz file (keys are output names)")
      ->type_name("OUT.npz");
  app->add_option("--threads", o->threads, "CPU threads (0: all cores)")->check(CLI::Range(0, 65536));
  app->add_option("--seed", o->seed, "seed of the random inputs");
  return Command{app, [o] { return run_run(*o); }};
}

}  // namespace ingot::cli
