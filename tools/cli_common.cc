#include "cli_common.h"

#include "backends/cpu/bf16_products.h"
#include "backends/cpu/float_kernel_util.h"
#include "runtime/engine.h"

#include <cstdio>
#include <iostream>

namespace ingot::cli {

// Messages quote names and values from the user's files: one line of text on a terminal whatever
// those hold. Line breaks become "; ", tabs spaces, and the rest goes through printable().
static std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  std::string folded;
  for (char c : s) {
    if (c == '\n') folded += "; ";
    else if (c == '\t') folded += ' ';
    else if (c != '\r') folded += c;
  }
  return printable(folded);
}

int error(const std::string& message) {
  std::cout.flush();
  std::fprintf(stderr, "ingot: error: %s\n", one_line(message).c_str());
  std::fflush(stderr);
  return kExitError;
}

int error(const Status& st) { return error(st.message()); }

int usage_error(const std::string& message) {
  error(message);
  return kExitUsage;
}

void note(const std::string& message) { std::cout << "note: " << one_line(message) << "\n"; }

std::string cpu_bf16_note(const std::string& device, const std::string& precision) {
  if (device != "cpu" || precision != "bf16" || cpu::bf16_products_pay()) return "";
  if (cpu::bf16_products_override() == false)
    return "INGOT_CPU_BF16_PRODUCTS=off: the engine's bf16 matrix products run in float32, products of a few rows "
           "on bf16 weights";
  return "this CPU's bf16 arithmetic is no faster than its float32 (AVX512-BF16 without AMX on an Intel CPU): "
         "the engine's bf16 matrix products run in float32 here, products of a few rows on bf16 weights; on a CPU "
         "with AMX, or an AMD Zen 4 or later, the same engine runs them in bf16";
}

Expected<Shape> parse_dims(const std::string& dims) {
  Shape s;
  if (dims.empty() || dims == "scalar") return s;
  size_t p = 0;
  while (true) {
    size_t x = dims.find_first_of("xX", p);
    std::string tok = dims.substr(p, x == std::string::npos ? std::string::npos : x - p);
    if (tok.empty()) return invalid_argument("empty dimension in '" + dims + "'");
    int64_t v = 0;
    for (char c : tok) {
      if (c < '0' || c > '9') return invalid_argument("dimension '" + tok + "' in '" + dims + "' is not a non-negative integer");
      if (v > (int64_t(1) << 40)) return invalid_argument("dimension '" + tok + "' in '" + dims + "' is too large");
      v = v * 10 + (c - '0');
    }
    s.push_back(v);
    if (x == std::string::npos) break;
    p = x + 1;
  }
  return s;
}

Expected<std::map<std::string, Shape>> parse_shapes(const std::string& flag, const std::string& spec) {
  std::map<std::string, Shape> out;
  const std::string expect = " (expected " + flag + " name:1x128,other:1x128)";
  size_t p = 0;
  while (p <= spec.size()) {
    size_t comma = spec.find(',', p);
    std::string item = spec.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    if (item.empty()) return invalid_argument(flag + ": empty entry in '" + spec + "'" + expect);
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return invalid_argument(flag + ": '" + item + "' has no 'name:' before its dimensions" + expect);
    }
    std::string name = item.substr(0, colon);
    // Allow quoting as trtexec does: 'input ids':1x8.
    if (name.size() >= 2 && (name.front() == '\'' || name.front() == '"') && name.back() == name.front()) {
      name = name.substr(1, name.size() - 2);
    }
    auto dims = parse_dims(item.substr(colon + 1));
    if (!dims) return invalid_argument(flag + ": input '" + name + "': " + dims.status().message() + expect);
    if (out.count(name)) return invalid_argument(flag + ": input '" + name + "' is given twice");
    out[name] = *dims;
    if (comma == std::string::npos) break;
    p = comma + 1;
  }
  return out;
}

Expected<std::pair<std::string, std::string>> parse_name_eq_file(const std::string& flag, const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return invalid_argument(flag + ": '" + spec + "' is not NAME=FILE (e.g. " + flag + " input_ids=ids.npy)");
  }
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) { b /= 1024; ++u; }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace ingot::cli

namespace ingot::cli {

void add_device_flags(CLI::App* app, DeviceFlags& f) {
  app->add_option("--device", f.device, "cpu or cuda (ONNX models; an engine file runs on its own device)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--precision", f.precision,
                  "fp32, fp16 or bf16 (ONNX models; cpu: fp32/bf16, cuda: fp32/fp16/bf16)")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
  app->add_option("--io-precision", f.io_precision,
                  "model or fp16 (ONNX models: float32 inputs and outputs as float16; an engine file keeps its own)")
      ->check(CLI::IsMember({"model", "fp16"}));
  app->add_flag("--no-cuda-graph", f.no_cuda_graph, "cuda: enqueue kernels one by one instead of replaying a CUDA graph");
  app->add_flag("--tf32", f.tf32, "cuda fp32: let matrix products use TF32 tensor cores (about 1e-3 relative error)");
}

void apply_device_flags(const DeviceFlags& f, EngineOptions& eo) {
  eo.device = f.device;
  eo.precision = f.precision;
  eo.io_precision = f.io_precision;
  eo.cuda_graph = !f.no_cuda_graph;
  eo.allow_tf32 = f.tf32;
}

std::vector<std::pair<std::string, Tensor>> inputs_as_model_declares(const Engine& engine,
                                                                     const std::map<std::string, Tensor>& inputs) {
  std::vector<std::pair<std::string, Tensor>> named;
  for (const IoInfo& io : engine.inputs()) {
    const Tensor& t = inputs.at(io.name);
    const bool widen = io.model_dtype == DType::kFloat32 && t.dtype() == DType::kFloat16;
    named.push_back({io.name, widen ? cpu::converted(t, DType::kFloat32) : t});
  }
  return named;
}

std::string describe_device_memory(const Engine& engine, const ExecutionContext* ctx) {
  const DeviceExecutor* d = engine.device();
  if (!d) return "";
  DeviceMemoryReport r = d->memory();
  if (ctx && ctx->device()) {
    DeviceMemoryReport c = ctx->device()->memory();
    r.arena = c.arena;
    r.workspace = c.workspace;
    r.io = c.io;
  } else {
    r.arena = d->arena_bytes();
  }
  return "weights " + human_bytes(double(r.weights)) + ", activation arena " + human_bytes(double(r.arena)) +
         ", workspace " + human_bytes(double(r.workspace)) + ", inputs/outputs " + human_bytes(double(r.io)) +
         " (total " + human_bytes(double(r.total())) + ")";
}

}  // namespace ingot::cli
