// ingot compare MODEL_OR_ENGINE: runs a model and checks its outputs against a reference:
//   --reference REF.npz      saved outputs (keys are output names)
//   --against ort            ONNX Runtime on the same model and inputs (a peer process)
//   --against OTHER.onnx     another model through ingot with the optimizer off (the plain
//                            reference kernels); OTHER may be MODEL itself
// Inputs from --inputs IN.npz, else random ones from --shapes/--seed (as ingot run makes them).
// Per output: max abs error, max rel error, mean abs error, cosine similarity, argmax agreement
// over the last axis, and PASS/FAIL with Polygraphy's rule |a - b| <= atol + rtol * |b| for
// every element (a: MODEL, b: the reference). Exit 0 only when every output passes.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "cli_common.h"
#include "io/json_text.h"
#include "io/npy.h"
#include "ort_peer.h"
#include "random_inputs.h"
#include "runtime/engine.h"
#include "runtime/parallel.h"

namespace ingot::cli {
namespace {

constexpr double kTolFp32 = 1e-5, kTolFp16 = 1e-2;

constexpr const char* kFooter =
    "Tolerances: an output passes when every element satisfies |a - b| <= atol + rtol * |b| (b: the\n"
    "reference), Polygraphy's rule. Defaults: atol = rtol = 1e-5 for float32/float64 (and integer)\n"
    "outputs, atol = rtol = 1e-2 for float16/bfloat16 outputs and for every float output of an fp16/bf16\n"
    "engine; --atol/--rtol apply to every output.\n"
    "NaN matches NaN at the same place. max rel error is over elements where b != 0. argmax\n"
    "agreement: % of rows (over the last axis) whose argmax is the same, for float outputs.\n"
    "Exit 0 when every output passes, 1 otherwise (or on an error), 2 on bad usage.";

struct CompareOptions {
  DeviceFlags device;
  std::string model;
  std::string inputs_npz;
  std::string reference;
  std::string against;
  std::string shapes;
  std::string json;
  std::string ort_peer = "auto";
  double atol = -1, rtol = -1;
  int threads = 0;
  uint64_t seed = 0;
};

std::string input_list(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& i : ios) s += (s.empty() ? "" : ", ") + i.name;
  return s.empty() ? "none" : s;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.scalar_as_double(i);
  return v;
}

// A value compare read or computed: NaN is printed as "nan" (bench's "-" means "no value").
std::string number_str(double v, int digits) { return std::isnan(v) ? "nan" : bench::general(v, digits); }

std::string index_str(const Shape& shape, int64_t flat) {
  if (shape.empty()) return "[]";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t n = std::max<int64_t>(shape[d], 1);
    idx[d] = flat % n;
    flat /= n;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

struct OutputResult {
  std::string name, ref_name;
  DType dtype = DType::kUndefined, ref_dtype = DType::kUndefined;
  Shape shape, ref_shape;
  double atol = 0, rtol = 0;
  bench::Agreement agreement;
  bool compared = false;
  bool pass = false;
  std::string reason;  // why it failed or was not compared
};

int run_compare(const CompareOptions& o) {
  // ---- usage
  if (o.reference.empty() == o.against.empty()) {
    return usage_error(o.reference.empty() ? "compare needs --reference REF.npz or --against ort|OTHER.onnx"
                                           : "--reference and --against cannot be given together");
  }
  std::map<std::string, Shape> shapes;
  if (!o.shapes.empty()) {
    auto s = parse_shapes("--shapes", o.shapes);
    if (!s) return usage_error(s.status().message());
    shapes = std::move(*s);
  }
  const bool vs_ort = o.against == "ort";
  const bool vs_model = !o.against.empty() && !vs_ort;

  std::unique_ptr<OrtPeer> peer;
  if (vs_ort) {
    auto p = OrtPeer::start(o.ort_peer, "--against ort");
    if (!p) return error(p.status());
    peer = std::move(*p);
  }

  // ---- model and inputs
  EngineOptions eo;
  eo.threads = o.threads;
  apply_device_flags(o.device, eo);
  auto engine_or = Engine::load(o.model, eo);
  if (!engine_or) return error(engine_or.status());
  std::shared_ptr<Engine> engine = *engine_or;
  const int threads = o.threads > 0 ? o.threads : num_threads();
  // ONNX Runtime runs the ONNX model: for an engine file, the one it was built from.
  std::string ort_model;
  if (vs_ort) {
    auto m = ort_model_for(o.model, engine->source_model());
    if (!m) return error(m.status());
    ort_model = *m;
  }

  std::map<std::string, Tensor> inputs;
  std::map<std::string, std::string> sources;
  if (!o.inputs_npz.empty()) {
    auto z = read_npz(o.inputs_npz);
    if (!z) return error(z.status());
    for (auto& [k, t] : *z) {
      if (!engine->find_input(k)) {
        return error(o.inputs_npz + ": array '" + k + "' is not an input of " + o.model + " (its inputs: " +
                     input_list(engine->inputs()) + ")");
      }
      inputs[k] = t;
      sources[k] = o.inputs_npz;
    }
  }
  for (const auto& [name, s] : shapes) {
    const IoInfo* io = engine->find_input(name);
    if (!io) return error("--shapes: " + o.model + " has no input '" + name + "' (its inputs: " + input_list(engine->inputs()) + ")");
  }
  Status made = add_random_inputs(*engine, shapes, o.seed, inputs, sources, [](const std::string& m) { note(m); });
  if (!made) return error(made);
  Status valid = engine->validate_inputs(inputs);
  if (!valid) return error(valid);

  auto ctx = engine->create_context();
  auto outs = ctx->run(inputs);
  if (!outs) return error(outs.status());

  // ---- the other side, as (name, tensor) in its own order
  std::vector<std::pair<std::string, Tensor>> ref;
  std::string ref_desc;
  std::string tmpdir;
  if (!o.reference.empty()) {
    auto z = read_npz(o.reference);
    if (!z) return error(z.status());
    for (auto& [k, t] : *z) ref.push_back({k, t});
    ref_desc = o.reference;
  } else if (vs_ort) {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/ingot-compare-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) return error("--against ort: cannot create a temporary directory");
    tmpdir = buf.data();
    std::string in_npz = tmpdir + "/inputs.npz", out_npz = tmpdir + "/outputs.npz";
    auto cleanup = [&] {
      ::unlink(in_npz.c_str());
      ::unlink(out_npz.c_str());
      ::rmdir(tmpdir.c_str());
    };
    Status st = write_npz(in_npz, inputs_as_model_declares(*engine, inputs));
    if (st) st = peer->load(ort_model, threads);
    if (st) st = peer->set_inputs(in_npz);
    if (st) st = peer->save_outputs(out_npz);
    if (!st) {
      cleanup();
      return error(st);
    }
    auto z = read_npz(out_npz);
    cleanup();
    if (!z) return error(z.status());
    for (auto& [k, t] : *z) ref.push_back({k, t});
    ref_desc = "ONNX Runtime " + peer->description() + ", " + std::to_string(threads) + " intra-op thread(s)" +
               (ort_model != o.model ? ", on " + ort_model + " (the engine's source model)" : std::string());
  } else {
    EngineOptions ro;
    ro.threads = o.threads;
    ro.optimize = false;
    auto other = Engine::load(o.against, ro);
    if (!other) return error(other.status());
    // Each input as this engine got it, or as the model declares it where the other one wants
    // that (this engine's float16 inputs for a model of float32 ones).
    std::map<std::string, Tensor> declared, other_inputs;
    for (auto& [k, t] : inputs_as_model_declares(*engine, inputs)) declared.emplace(k, std::move(t));
    for (const auto& io : (*other)->inputs()) {
      auto it = inputs.find(io.name);
      if (it == inputs.end()) {
        return error("--against " + o.against + ": its input '" + io.name + "' is not an input of " + o.model +
                     " (its inputs: " + input_list(engine->inputs()) + ")");
      }
      other_inputs[io.name] = it->second.dtype() == io.dtype ? it->second : declared.at(io.name);
    }
    auto octx = (*other)->create_context();
    auto oouts = octx->run(other_inputs);
    if (!oouts) return error(oouts.status());
    for (auto& nt : *oouts) ref.push_back({nt.name, nt.tensor});
    ref_desc = o.against + " through ingot, optimizer off (reference kernels)";
  }

  // ---- match outputs: by name; for another model with the same number of outputs and
  // different names, by position.
  std::vector<OutputResult> results;
  bool by_position = false;
  if (vs_model && ref.size() == outs->size()) {
    bool all_named = true;
    for (const auto& nt : *outs) {
      bool found = false;
      for (const auto& r : ref) found = found || r.first == nt.name;
      all_named = all_named && found;
    }
    by_position = !all_named;
  }
  if (by_position) note("output names differ from " + o.against + "'s; matching outputs by position");

  const bool user_tol = o.atol >= 0 || o.rtol >= 0;
  bool any_half = false, any_full = false;
  for (size_t i = 0; i < outs->size(); ++i) {
    const NamedTensor& nt = (*outs)[i];
    OutputResult r;
    r.name = nt.name;
    r.dtype = nt.tensor.dtype();
    r.shape = nt.tensor.shape();
    // An fp16/bf16 engine's float32 outputs carry half-precision error too.
    bool half = r.dtype == DType::kFloat16 || r.dtype == DType::kBFloat16 ||
                (dtype_is_float(r.dtype) && engine->options().precision != "fp32");
    (half ? any_half : any_full) = true;
    r.atol = o.atol >= 0 ? o.atol : half ? kTolFp16 : kTolFp32;
    r.rtol = o.rtol >= 0 ? o.rtol : half ? kTolFp16 : kTolFp32;
    const Tensor* b = nullptr;
    if (by_position) {
      b = &ref[i].second;
      r.ref_name = ref[i].first;
    } else {
      for (const auto& [k, t] : ref) {
        if (k == nt.name) {
          b = &t;
          r.ref_name = k;
        }
      }
    }
    if (!b) {
      r.reason = "no output '" + nt.name + "' in the reference";
    } else {
      r.ref_dtype = b->dtype();
      r.ref_shape = b->shape();
      if (b->shape() != nt.tensor.shape()) {
        r.reason = "shape [" + shape_str(nt.tensor.shape()) + "] but the reference has [" + shape_str(b->shape()) + "]";
      } else if (!dtype_is_supported(nt.tensor.dtype()) || !dtype_is_supported(b->dtype())) {
        r.reason = "dtype " + dtype_name(nt.tensor.dtype()) + " / " + dtype_name(b->dtype()) + " cannot be compared";
      } else {
        int64_t row = 0;
        if (dtype_is_float(r.dtype) && !r.shape.empty() && r.shape.back() >= 2) row = r.shape.back();
        r.agreement = bench::agree(as_doubles(nt.tensor), as_doubles(*b), r.atol, r.rtol, row);
        r.compared = true;
        r.pass = r.agreement.pass();
        if (!r.pass) {
          const auto& a = r.agreement;
          int64_t k = a.first_violation;
          r.reason = std::to_string(a.violations) + " of " + std::to_string(a.count) + " elements out of tolerance";
          if (k >= 0) {
            r.reason += "; first at " + index_str(r.shape, k) + ": " + number_str(nt.tensor.scalar_as_double(k), 7) +
                        " vs " + number_str(b->scalar_as_double(k), 7);
          }
        }
      }
    }
    results.push_back(r);
  }

  // ---- report
  std::cout << "model      " << o.model << " (optimizer on, " << threads << " thread(s))\n";
  std::cout << "reference  " << ref_desc << "\n";
  for (const auto& io : engine->inputs()) {
    const Tensor& t = inputs[io.name];
    std::cout << "input      " << io.name << "  " << dtype_name(t.dtype()) << "  [" << shape_str(t.shape()) << "]  "
              << sources[io.name] << "\n";
  }
  if (user_tol) {
    std::cout << "tolerance  atol " << bench::general(results.empty() ? o.atol : results[0].atol, 3) << ", rtol "
              << bench::general(results.empty() ? o.rtol : results[0].rtol, 3) << " (given; "
              << (o.atol < 0 || o.rtol < 0 ? "the other one is the default for the dtype; " : "")
              << "pass: |a - b| <= atol + rtol * |b| everywhere)\n";
  } else {
    std::string which;
    if (any_full) which += "atol = rtol = 1e-5 (defaults for float32 outputs)";
    if (any_half) which += std::string(which.empty() ? "" : "; ") + "atol = rtol = 1e-2 (defaults for float16/bfloat16 outputs)";
    if (which.empty()) which = "defaults: atol = rtol = 1e-5 (float32), 1e-2 (float16/bfloat16)";
    std::cout << "tolerance  " << which << "; pass: |a - b| <= atol + rtol * |b| everywhere\n";
  }
  std::vector<std::string> header = {"output", "dtype", "shape", "max abs err", "max rel err", "mean abs err",
                                     "cosine", "argmax agree", "atol", "rtol", "result"};
  std::vector<bool> right = {false, false, false, true, true, true, true, true, true, true, false};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> failed;
  for (const auto& r : results) {
    const auto& a = r.agreement;
    std::string argmax = r.compared && a.rows > 0 ? bench::fixed(100.0 * double(a.rows_agree) / double(a.rows), 2) + "%" : "-";
    std::string name = r.name + (r.ref_name.empty() || r.ref_name == r.name ? "" : " (vs " + r.ref_name + ")");
    rows.push_back({name, dtype_name(r.dtype), "[" + shape_str(r.shape) + "]", r.compared ? number_str(a.max_abs, 3) : "-",
                    r.compared ? number_str(a.max_rel, 3) : "-", r.compared ? number_str(a.mean_abs, 3) : "-",
                    r.compared ? (std::isnan(a.cosine) ? "nan" : bench::fixed(a.cosine, 6)) : "-", argmax, bench::general(r.atol, 2),
                    bench::general(r.rtol, 2), r.pass ? "PASS" : "FAIL"});
    if (!r.pass) failed.push_back(r.name);
  }
  std::cout << "\n" << bench::markdown_table(header, right, rows) << "\n";
  for (const auto& r : results) {
    if (!r.pass) std::cout << r.name << ": " << r.reason << "\n";
  }

  if (!o.json.empty()) {
    nlohmann::json j;
    j["model"] = o.model;
    j["reference"] = {{"kind", !o.reference.empty() ? "npz" : vs_ort ? "ort" : "onnx"},
                      {"path", !o.reference.empty() ? o.reference : vs_ort ? "" : o.against},
                      {"description", ref_desc}};
    j["threads"] = threads;
    j["inputs"] = nlohmann::json::object();
    for (const auto& io : engine->inputs()) {
      j["inputs"][io.name] = {{"dtype", dtype_name(inputs[io.name].dtype())},
                              {"shape", inputs[io.name].shape()},
                              {"source", sources[io.name]}};
    }
    j["outputs"] = nlohmann::json::array();
    for (const auto& r : results) {
      const auto& a = r.agreement;
      nlohmann::json e = {{"name", r.name}, {"reference_name", r.ref_name}, {"dtype", dtype_name(r.dtype)},
                          {"shape", r.shape}, {"atol", r.atol}, {"rtol", r.rtol}, {"pass", r.pass},
                          {"compared", r.compared}};
      if (r.ref_dtype != DType::kUndefined) {
        e["reference_dtype"] = dtype_name(r.ref_dtype);
        e["reference_shape"] = r.ref_shape;
      }
      if (r.compared) {
        e["count"] = a.count;
        e["max_abs_error"] = a.max_abs;  // inf is written as null
        e["max_rel_error"] = a.max_rel;
        e["mean_abs_error"] = a.mean_abs;
        e["cosine_similarity"] = a.cosine;
        e["violations"] = a.violations;
        e["nan_mismatches"] = a.nan_mismatch;
        e["argmax_rows"] = a.rows;
        e["argmax_agree_rows"] = a.rows_agree;
        e["argmax_agreement"] = a.rows ? nlohmann::json(double(a.rows_agree) / double(a.rows)) : nlohmann::json(nullptr);
      }
      if (!r.reason.empty()) e["reason"] = r.reason;
      j["outputs"].push_back(e);
    }
    j["pass"] = failed.empty();
    j["failed"] = failed;
    std::ofstream f(o.json);
    if (!f) return error(o.json + ": cannot open for writing");
    f << json_text(j, 2) << "\n";
    if (!f) return error(o.json + ": write failed");
    std::cout << "wrote " << o.json << "\n";
  }

  if (failed.empty()) {
    std::cout << "PASS: all " << results.size() << " output(s) match within tolerance\n";
    return kExitOk;
  }
  std::string names;
  for (const auto& n : failed) names += (names.empty() ? "" : ", ") + n;
  std::cout << "FAIL: " << failed.size() << " of " << results.size() << " output(s) differ beyond tolerance: " << names
            << "\n";
  return kExitError;
}

}  // namespace

Command setup_compare(CLI::App& parent) {
  static const CLI::Validator kNonNegative(
      [](std::string& s) -> std::string {
        try {
          size_t pos = 0;
          double v = std::stod(s, &pos);
          if (pos == s.size() && std::isfinite(v) && v >= 0) return "";
        } catch (...) {
        }
        return "'" + s + "' is not a non-negative number";
      },
      "NUMBER>=0");
  auto o = std::make_shared<CompareOptions>();
  CLI::App* app = parent.add_subcommand(
      "compare", "check a model's outputs against saved outputs, ONNX Runtime, or another model (Polygraphy-like)");
  app->add_option("model", o->model, "ONNX model or ingot engine file")->required();
  app->add_option("--inputs", o->inputs_npz, "inputs from an .npz file (keys are input names); others are random")
      ->type_name("IN.npz");
  app->add_option("--reference", o->reference, "reference outputs from an .npz file (keys are output names)")
      ->type_name("REF.npz");
  app->add_option("--against", o->against,
                  "'ort': ONNX Runtime on the same model and inputs; or OTHER.onnx: that model through ingot with "
                  "the optimizer off")
      ->type_name("ort|OTHER.onnx");
  app->add_option("--atol", o->atol, "absolute tolerance (default 1e-5; 1e-2 for float16/bfloat16 outputs)")
      ->check(kNonNegative);
  app->add_option("--rtol", o->rtol, "relative tolerance (default 1e-5; 1e-2 for float16/bfloat16 outputs)")
      ->check(kNonNegative);
  app->add_option("--shapes", o->shapes, "shapes of random inputs, e.g. input_ids:1x128,attention_mask:1x128")
      ->type_name("SPEC");
  app->add_option("--seed", o->seed, "seed of the random inputs (as ingot run)");
  add_device_flags(app, o->device);
  app->add_option("--threads", o->threads, "CPU threads (0: all cores); also ONNX Runtime's intra-op threads")
      ->check(CLI::Range(0, 65536));
  app->add_option("--json", o->json, "write every number to a JSON file")->type_name("FILE");
  app->add_option("--ort-peer", o->ort_peer, "which ONNX Runtime peer: auto (python first), python, node")
      ->check(CLI::IsMember({"auto", "python", "node"}));
  app->footer(kFooter);
  return Command{app, [o] { return run_compare(*o); }};
}

}  // namespace ingot::cli
