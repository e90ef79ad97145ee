// ingot build MODEL -o ENGINE [--device cpu|cuda] [--precision fp32|fp16|bf16] [--io-precision model|fp16]
//             [profiles] [--verbose]:
// optimizes an ONNX model for a range of input shapes and writes an engine file.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "io/json_text.h"
#include "runtime/engine.h"

namespace ingot::cli {
namespace {

struct BuildOptions {
  std::string model, output, device = "cpu", precision = "fp32", io_precision = "model";
  std::string min_shapes, opt_shapes, max_shapes, profiles_file;
  std::vector<std::string> profiles, disabled;
  int threads = 0;
  bool verbose = false;
  bool tf32 = false;
};

// The choices a device kept (the entries of device_tuning's lists).
size_t tuned_choices(const Engine& e) {
  size_t n = 0;
  if (e.options().device_tuning.is_object())
    for (const auto& [key, value] : e.options().device_tuning.items())
      if (value.is_array()) n += value.size();
  return n;
}

// "--profile MIN;OPT;MAX", each part in --shapes syntax.
Expected<Profile> parse_profile_flag(const std::string& spec) {
  std::vector<std::string> parts;
  size_t b = 0;
  for (size_t e; (e = spec.find(';', b)) != std::string::npos; b = e + 1) parts.push_back(spec.substr(b, e - b));
  parts.push_back(spec.substr(b));
  if (parts.size() != 3) {
    return invalid_argument("--profile '" + spec + "': expected MIN;OPT;MAX, each like input_ids:1x16,attention_mask:1x16");
  }
  Profile p;
  std::map<std::string, Shape>* corners[3] = {&p.min, &p.opt, &p.max};
  for (int i = 0; i < 3; ++i) {
    auto s = parse_shapes("--profile", parts[size_t(i)]);
    if (!s) return s.status();
    *corners[i] = std::move(*s);
  }
  return p;
}

// A JSON file in the engine manifest's profile form (see runtime/profile.h).
Expected<std::vector<Profile>> read_profiles_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return not_found(path + ": no such file");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(path + ": not a profiles file (not valid JSON)");
  auto ps = profiles_from_json(j);
  if (!ps) return ps.status().with_context(path + ": ");
  return ps;
}

int run_build(const BuildOptions& o) {
  EngineOptions eo;
  eo.device = o.device;
  eo.precision = o.precision;
  eo.io_precision = o.io_precision;
  eo.threads = o.threads;
  eo.allow_tf32 = o.tf32;
  eo.disabled_passes.insert(o.disabled.begin(), o.disabled.end());
  if (!o.min_shapes.empty() || !o.opt_shapes.empty() || !o.max_shapes.empty()) {
    Profile p;
    for (auto [flag, spec, dst] : {std::tuple{"--min-shapes", &o.min_shapes, &p.min},
                                   std::tuple{"--opt-shapes", &o.opt_shapes, &p.opt},
                                   std::tuple{"--max-shapes", &o.max_shapes, &p.max}}) {
      if (spec->empty()) continue;
      auto s = parse_shapes(flag, *spec);
      if (!s) return usage_error(s.status().message());
      *dst = std::move(*s);
    }
    eo.profiles.push_back(std::move(p));
  }
  for (const auto& spec : o.profiles) {
    auto p = parse_profile_flag(spec);
    if (!p) return usage_error(p.status().message());
    eo.profiles.push_back(std::move(*p));
  }
  if (!o.profiles_file.empty()) {
    auto ps = read_profiles_file(o.profiles_file);
    if (!ps) return error(ps.status());
    for (auto& p : *ps) eo.profiles.push_back(std::move(p));
  }

  auto t0 = std::chrono::steady_clock::now();
  auto engine = Engine::load(o.model, eo);
  if (!engine) return error(engine.status());
  auto t1 = std::chrono::steady_clock::now();
  // A device engine is tuned on a run at each profile's opt shapes: the device keeps what it
  // chose (cuda: the configurations of the large matrix products) in the engine file.
  Status tuned = (*engine)->tune_at_opt_shapes();
  if (!tuned) return error(tuned);
  auto t2 = std::chrono::steady_clock::now();
  const Engine& e = **engine;

  if (o.verbose) {
    std::cout << "passes (in order):\n";
    for (const PassReport& r : e.pass_reports()) {
      std::cout << "  " << std::left << std::setw(24) << r.name;
      if (r.disabled) std::cout << "disabled\n";
      else std::cout << r.rewrites << " rewrites, nodes " << r.nodes_before << " -> " << r.nodes_after << "\n";
      for (const std::string& n : r.notes) std::cout << "    " << n << "\n";
    }
  }
  size_t nodes_before = e.pass_reports().empty() ? e.model().graph.nodes.size() : e.pass_reports().front().nodes_before;
  std::cout << "model:      " << o.model << "\n";
  std::cout << "nodes:      " << nodes_before << " -> " << e.model().graph.nodes.size() << " after optimization\n";
  if (e.profiles().empty()) {
    std::cout << "profiles:   none (" << (e.memory_plan() ? "static input shapes" : kDynamicWithoutProfile) << ")\n";
  } else {
    std::cout << "profiles:   " << describe_profiles(e.profiles()) << "\n";
  }
  for (const auto& [what, names] : {std::pair{"inputs", &e.options().retyped_io.inputs},
                                    std::pair{"outputs", &e.options().retyped_io.outputs}})
    if (!names->empty()) {
      std::cout << "float16 io: " << what;
      for (size_t i = 0; i < names->size(); ++i) std::cout << (i ? ", " : " ") << (*names)[i];
      std::cout << " (float32 in the model)\n";
    }
  std::cout << "weights:    " << human_bytes(double(e.weight_bytes())) << "\n";
  if (const MemoryPlan* plan = e.memory_plan()) {
    std::cout << "arena:      " << human_bytes(double(plan->arena_bytes)) << " for " << plan->planned_values
              << " intermediate tensors totalling " << human_bytes(double(plan->intermediate_bytes))
              << " (sized for the max shapes)\n";
  }
  if (const auto& d = e.device_properties()) {
    std::cout << "device:     " << d->name << " (compute capability " << d->compute_capability << ", CUDA runtime "
              << d->runtime_version << ", driver supports CUDA " << d->driver_version << ")\n";
    std::cout << "device mem: " << describe_device_memory(e, nullptr) << "\n";
    std::vector<FallbackOp> fallbacks = e.device()->fallback_ops();
    if (fallbacks.empty()) {
      std::cout << "cpu ops:    none (every node runs on the GPU)\n";
    } else {
      std::cout << "cpu ops:    " << fallbacks.size() << " node(s) run on the CPU, with copies around them:\n";
      if (o.verbose) {
        for (const FallbackOp& f : fallbacks)
          std::cout << "  " << f.node << ": " << f.reason
                    << (f.copy_bytes >= 0 ? ", copies " + human_bytes(double(f.copy_bytes)) + " per run" : "") << "\n";
      } else {
        note("ingot build --verbose lists them");
      }
    }
  }
  if (size_t n = tuned_choices(e); n > 0) {
    std::cout << "tuned:      " << n << " device choice(s) at the opt shapes, in " << std::fixed << std::setprecision(2)
              << std::chrono::duration<double>(t2 - t1).count() << " s\n";
    if (o.verbose)
      for (const auto& [kind, list] : e.options().device_tuning.items())
        if (list.is_array())
          for (const auto& entry : list) std::cout << "  " << kind << ": " << json_text(entry) << "\n";
  }
  Status st = e.save(o.output);
  if (!st) return error(st);
  std::cout << "engine:     " << o.output << " (" << human_bytes(double(std::filesystem::file_size(o.output)))
            << ", device " << o.device << ", precision " << o.precision << ", built in "
            << std::fixed << std::setprecision(2) << std::chrono::duration<double>(t1 - t0).count() << " s)\n";
  if (std::string n = cpu_bf16_note(o.device, o.precision); !n.empty()) note(n);
  return kExitOk;
}

}  // namespace

Command setup_build(CLI::App& parent) {
  auto o = std::make_shared<BuildOptions>();
  CLI::App* app = parent.add_subcommand("build", "optimize a model for a range of shapes and save an engine file");
  app->add_option("model", o->model, "ONNX model file")->required();
  app->add_option("-o,--output", o->output, "engine file to write")->required()->type_name("ENGINE");
  app->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_flag("--tf32", o->tf32, "cuda fp32: let matrix products use TF32 tensor cores (about 1e-3 relative error)");
  app->add_option("--precision", o->precision,
                  "fp32, fp16 or bf16 (cpu bf16: matrix products in bfloat16; cuda: the graph's float tensors "
                  "converted)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app->add_option("--io-precision", o->io_precision,
                  "model (default: the model's input and output dtypes) or fp16 (its float32 inputs and outputs "
                  "are float16: half the bytes to copy, and no widening of half-precision results)")
      ->check(CLI::IsMember({"model", "fp16"}));
  app->add_option("--min-shapes", o->min_shapes, "smallest input shapes, e.g. input_ids:1x1,attention_mask:1x1");
  app->add_option("--opt-shapes", o->opt_shapes, "shapes to optimize for");
  app->add_option("--max-shapes", o->max_shapes, "largest input shapes (the memory plan is sized for them)");
  app->add_option("--profile", o->profiles, "another profile: MIN;OPT;MAX, each in --shapes syntax (repeatable)");
  app->add_option("--profiles", o->profiles_file, "JSON list of {\"min\":{..},\"opt\":{..},\"max\":{..}} profiles");
  app->add_option("--disable-pass", o->disabled, "skip an optimizer pass by name (repeatable)");
  app->add_option("--threads", o->threads, "CPU threads (0: all cores)")->check(CLI::Range(0, 65536));
  app->add_flag("-v,--verbose", o->verbose, "list every pass, its rewrites and node counts, and what the device tuned");
  return Command{app, [o] { return run_build(*o); }};
}

}  // namespace ingot::cli
