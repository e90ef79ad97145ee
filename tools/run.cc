// ingot run MODEL: runs a model once on given or random inputs and prints/saves the outputs.
//   --inputs IN.npz, --input name=FILE.npy: given inputs (keys/names are input names)
//   --shapes name:1x128,...: shapes of the random inputs (trtexec's spelling)
//   --save-outputs OUT.npz: outputs keyed by output name
// Random inputs (tools/random_inputs.h) are chosen to be valid for typical models: integer inputs
// that feed a Gather (an embedding lookup) stay below the table size, "mask" inputs are ones,
// "token_type" zeros, "position" an arange.
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
#include "random_inputs.h"
#include "runtime/engine.h"
#include "text_inputs.h"

namespace ingot::cli {
namespace {

struct RunOptions {
  DeviceFlags device;
  std::string model;
  std::string inputs_npz;
  std::vector<std::string> input_files;
  std::string shapes;
  std::string save_outputs;
  int threads = 0;
  uint64_t seed = 0;
  TextRunOptions text;  // --tokenizer, --text, ... (tools/text_inputs.h)
};

std::string input_list(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& i : ios) s += (s.empty() ? "" : ", ") + i.name;
  return s.empty() ? "none" : s;
}

std::string fmt_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void print_output(const std::string& name, const Tensor& t) {
  std::cout << "output '" << printable(name) << "'  " << dtype_name(t.dtype()) << "  [" << shape_str(t.shape()) << "]\n";
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
  if (Status st = check_text_usage(o.text); !st) return usage_error(st.message());

  EngineOptions eo;
  eo.threads = o.threads;
  apply_device_flags(o.device, eo);
  auto engine_or = Engine::load(o.model, eo);
  if (!engine_or) return error(engine_or.status());
  std::shared_ptr<Engine> engine = *engine_or;
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

  // --text: the inputs not given by files come from the tokenizer (an error for any it cannot make).
  std::unique_ptr<TextRun> text_run;
  if (o.text.active()) {
    auto tr = TextRun::start(*engine, o.text, inputs, sources);
    if (!tr) return error(tr.status());
    text_run = std::move(*tr);
  }

  Status made = add_random_inputs(*engine, shapes, o.seed, inputs, sources, [](const std::string& m) { note(m); });
  if (!made) return error(made);

  Status valid = engine->validate_inputs(inputs);
  if (!valid) return error(valid);
  for (const auto& io : engine->inputs()) {
    const Tensor& t = inputs[io.name];
    std::cout << "input '" << printable(io.name) << "'  " << dtype_name(t.dtype()) << "  [" << shape_str(t.shape()) << "]  "
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
  if (text_run) {
    Status shown = text_run->print(std::cout, *engine, *outs);
    if (!shown) return error(shown);
  }

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
  app->add_option("model", o->model, "ONNX model or engine file")->required();
  app->add_option("--inputs", o->inputs_npz, "inputs from an .npz file (keys are input names)")->type_name("IN.npz");
  app->add_option("--input", o->input_files, "one input from an .npy file (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--shapes", o->shapes, "shapes of random inputs, e.g. input_ids:1x128,attention_mask:1x128")
      ->type_name("SPEC");
  app->add_option("--save-outputs", o->save_outputs, "write the outputs to an .npz file (keys are output names)")
      ->type_name("OUT.npz");
  add_device_flags(app, o->device);
  app->add_option("--threads", o->threads, "CPU threads (0: all cores)")->check(CLI::Range(0, 65536));
  app->add_option("--seed", o->seed, "seed of the random inputs");
  add_text_options(*app, o->text);
  return Command{app, [o] { return run_run(*o); }};
}

}  // namespace ingot::cli
