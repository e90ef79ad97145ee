#include "runtime/engine.h"

#include <algorithm>
#include <random>

#include "ir/dispatch.h"
#include "ir/host_memory.h"
#include "onnx_import/import.h"
#include "passes/convert_precision.h"
#include "plan/engine_file.h"
#include "runtime/parallel.h"

namespace ingot {

namespace {

// The instruction set an engine's kernels need: ingot is compiled for x86-64-v3; bf16 matrix
// products want AVX-512 (oneDNN's bf16 paths).
std::string required_isa(const std::string& precision) { return precision == "bf16" ? "avx512_core" : "x86-64-v3"; }

bool cpu_has(const std::string& isa) {
  __builtin_cpu_init();
  if (isa == "x86-64-v3") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == "avx512_core") return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return false;
}

// The graph's float32 tensors become float16/bfloat16 (inputs and outputs keep their dtypes).
// Engines loaded from a file are converted already.
Status convert_graph(Model& m, const std::string& precision, bool convert) {
  if (!convert) return Status::ok();
  PrecisionOptions po;
  po.target = precision == "fp16" ? DType::kFloat16 : DType::kBFloat16;
  po.keep_output_producers_fp32 = po.target == DType::kBFloat16;
  auto n = convert_float_precision(m, po);
  return n ? Status::ok() : n.status();
}

// cuda: fp32 as is; fp16 and bf16 convert the graph.
Status apply_device_precision(Model& m, const std::string& precision, bool convert) {
  if (precision == "fp32") return Status::ok();
  if (precision != "fp16" && precision != "bf16")
    return invalid_argument("unknown precision '" + precision + "' (expected fp32, fp16 or bf16)");
  return convert_graph(m, precision, convert);
}

// cpu: fp16 converts the graph (storage and arithmetic in float16 where the kernels have it);
// bf16 keeps float32 storage and runs the fused matrix products in bfloat16 (oneDNN, AMX),
// which is faster on CPUs than converting every tensor.
Status apply_precision(Model& m, const std::string& precision, bool convert) {
  if (precision == "fp32") return Status::ok();
  if (precision == "fp16") return convert_graph(m, precision, convert);
  if (precision != "bf16") return invalid_argument("unknown precision '" + precision + "' (expected fp32, fp16 or bf16)");
  // Fused ops that know a `precision` attribute run their matrix products in bf16.
  for (Node& n : m.graph.nodes) {
    if (n.domain != "ingot") continue;
    Attribute a;
    a.kind = Attribute::Kind::kString;
    a.s = precision;
    n.attrs.set("precision", a);
  }
  return Status::ok();
}

// The GPU this process would run on, or why there is none.
Expected<DeviceProperties> cuda_device() {
  const DeviceBackend* b = find_device_backend("cuda");
  if (!b) return unsupported("device 'cuda' is not available: this ingot was built without CUDA");
  auto p = b->properties();
  if (!p) return p.status().with_context("device 'cuda': ");
  return p;
}

// A cuda engine runs only on a GPU of the compute capability it was built for: its kernels and
// the algorithms its libraries chose are specific to it.
Status check_cuda_engine(const nlohmann::json& man) {
  auto p = cuda_device();
  if (!p) return Status(p.status().code(), "engine was built for device 'cuda': " + p.status().message());
  const nlohmann::json& c = man.at("cuda");
  std::string cc = c.at("compute_capability").get<std::string>();
  if (cc != p->compute_capability) {
    return unsupported("engine was built for compute capability " + cc + " (" + c.value("gpu", std::string("?")) +
                       "), but this GPU (" + p->name + ") has compute capability " + p->compute_capability +
                       ": rebuild the engine on this machine");
  }
  return Status::ok();
}

// What the ONNX model declares for v: float32 where retype_float_io made it float16.
DType model_dtype(const std::vector<std::string>& retyped, const ValueInfo& v) {
  return std::find(retyped.begin(), retyped.end(), v.name) != retyped.end() ? DType::kFloat32 : v.dtype;
}

}  // namespace

Expected<std::shared_ptr<Engine>> Engine::load(const std::string& path, const EngineOptions& opts) {
  if (!is_engine_file(path)) return from_onnx(path, opts);
  auto file = read_engine_file(path);
  if (!file) return file.status();
  const nlohmann::json& man = file->manifest;
  EngineOptions eo = opts;
  try {
    std::string device = man.at("device").get<std::string>();
    if (!opts.device.empty() && device != opts.device) {
      return invalid_argument(path + ": engine was built for device '" + device + "', not '" + opts.device + "'");
    }
    if (device == "cuda") {
      INGOT_RETURN_IF_ERROR(check_cuda_engine(man).with_context(path + ": "));
      eo.allow_tf32 = man.value("allow_tf32", false);
    } else if (device != "cpu") {
      return unsupported(path + ": engine was built for device '" + device + "', which this ingot cannot run");
    } else {
      std::string isa = man.at("isa").get<std::string>();
      if (!cpu_has(isa)) return unsupported(path + ": engine needs a CPU with " + isa + ", which this machine lacks: rebuild it here");
    }
    eo.device = device;
    eo.precision = man.at("precision").get<std::string>();
    eo.io_precision = man.value("io_precision", std::string("model"));
    if (man.contains("retyped_io")) {
      eo.retyped_io.inputs = man["retyped_io"].at("inputs").get<std::vector<std::string>>();
      eo.retyped_io.outputs = man["retyped_io"].at("outputs").get<std::vector<std::string>>();
    }
    auto profiles = profiles_from_json(man.at("profiles"));
    if (!profiles) return profiles.status().with_context(path + ": engine manifest: ");
    eo.profiles = std::move(*profiles);
  } catch (const std::exception& ex) {
    return invalid_model(path + ": engine manifest is missing fields: " + ex.what());
  }
  eo.source_model = man.value("source_model", "");
  if (man.contains("device_tuning")) eo.device_tuning = man["device_tuning"];
  eo.optimize = false;  // the stored graph is already optimized (and precision applied)
  eo.from_engine_file = true;
  file->model.path = path;
  return from_model(std::move(file->model), eo);
}

Status Engine::save(const std::string& path) const {
  nlohmann::json man;
  man["format_version"] = kEngineFormatVersion;
  man["ingot_version"] = INGOT_VERSION;
  man["device"] = opts_.device;
  if (device_props_) {
    const DeviceProperties& d = *device_props_;
    std::string sm = d.compute_capability;
    sm.erase(std::remove(sm.begin(), sm.end(), '.'), sm.end());
    man["isa"] = "sm_" + sm;
    man["cuda"] = {{"compute_capability", d.compute_capability}, {"gpu", d.name},
                   {"cuda_runtime", d.runtime_version}, {"driver_cuda", d.driver_version}};
    man["allow_tf32"] = opts_.allow_tf32;
  } else {
    man["isa"] = required_isa(opts_.precision);
  }
  man["precision"] = opts_.precision;
  man["io_precision"] = opts_.io_precision;
  if (opts_.io_precision != "model")
    man["retyped_io"] = {{"inputs", opts_.retyped_io.inputs}, {"outputs", opts_.retyped_io.outputs}};
  man["source_model"] = opts_.source_model;
  man["profiles"] = profiles_to_json(opts_.profiles);
  nlohmann::json passes = nlohmann::json::array();
  for (const PassReport& r : pass_reports_) passes.push_back({{"name", r.name}, {"rewrites", r.rewrites}});
  man["passes"] = passes;
  if (plan_) man["arena_bytes"] = plan_->arena_bytes;
  if (!opts_.device_tuning.is_null()) man["device_tuning"] = opts_.device_tuning;
  man["weight_bytes"] = weight_bytes();
  return write_engine_file(path, model_, man);
}

Expected<std::shared_ptr<Engine>> Engine::from_onnx(const std::string& path, const EngineOptions& opts) {
  auto m = load_onnx(path);
  if (!m) return m.status();
  return from_model(std::move(*m), opts);
}

Expected<std::shared_ptr<Engine>> Engine::from_model(Model model, const EngineOptions& given) {
  EngineOptions opts = given;
  if (opts.device.empty()) opts.device = "cpu";
  if (opts.source_model.empty()) opts.source_model = model.path;
  std::shared_ptr<Engine> e(new Engine());
  const bool cuda = opts.device == "cuda";
  if (cuda) {
    auto p = cuda_device();
    if (!p) return p.status();
    e->device_props_ = *p;
  } else if (opts.device != "cpu") {
    return invalid_argument("unknown device '" + opts.device + "' (expected cpu or cuda)");
  } else if (!cpu_has(required_isa(opts.precision))) {
    return unsupported("precision " + opts.precision + " needs a CPU with " + required_isa(opts.precision));
  }
  e->model_ = std::move(model);
  e->opts_ = opts;
  if (opts.threads > 0) set_num_threads(opts.threads);
  for (Profile& p : e->opts_.profiles) INGOT_RETURN_IF_ERROR(complete_profile(e->model_.path, e->model_.graph, p));
  if (opts.optimize) {
    OptimizeOptions oo;
    oo.disabled = opts.disabled_passes;
    oo.device = opts.device;
    // Opt of the first profile first, then every corner the engine must stay correct for.
    for (const Profile& p : e->opts_.profiles) oo.bindings.push_back(p.opt);
    for (const Profile& p : e->opts_.profiles) {
      oo.bindings.push_back(p.min);
      oo.bindings.push_back(p.max);
    }
    for (const auto& b : opts.shape_bindings) oo.bindings.push_back(b);
    auto reports = optimize(e->model_, oo);
    if (!reports) return reports.status().with_context(e->model_.path + ": ");
    e->pass_reports_ = std::move(*reports);
  }
  if (!opts.from_engine_file) {
    if (opts.io_precision == "fp16") {
      auto r = retype_float_io(e->model_, DType::kFloat16);
      if (!r) return r.status();
      e->opts_.retyped_io = std::move(*r);
    } else if (opts.io_precision != "model") {
      return invalid_argument("unknown io precision '" + opts.io_precision + "' (expected model or fp16)");
    }
  }
  Status precision = cuda ? apply_device_precision(e->model_, opts.precision, !opts.from_engine_file)
                          : apply_precision(e->model_, opts.precision, !opts.from_engine_file);
  INGOT_RETURN_IF_ERROR(precision.with_context(e->model_.path + ": "));
  if (opts.optimize) {
    OptimizeOptions oo;
    oo.stage = PassStage::kAfterPrecision;
    oo.disabled = opts.disabled_passes;
    oo.device = opts.device;
    auto reports = optimize(e->model_, oo);
    if (!reports) return reports.status().with_context(e->model_.path + ": ");
    e->pass_reports_.insert(e->pass_reports_.end(), reports->begin(), reports->end());
  }
  const Graph& g = e->model_.graph;
  for (ValueId id : g.inputs) {
    const ValueInfo& v = g.value(id);
    if (!v.non_tensor_kind.empty()) {
      return unsupported(e->model_.path + ": input '" + v.name + "' is a " + v.non_tensor_kind +
                         "; ingot runs tensor inputs only");
    }
    if (v.dtype == DType::kString) return unsupported(e->model_.path + ": input '" + v.name + "' is a string tensor; ingot does not support strings");
    e->inputs_.push_back(IoInfo{v.name, v.dtype, v.shape, model_dtype(e->opts_.retyped_io.inputs, v)});
  }
  for (ValueId id : g.outputs) {
    const ValueInfo& v = g.value(id);
    if (!v.non_tensor_kind.empty()) {
      return unsupported(e->model_.path + ": output '" + v.name + "' is a " + v.non_tensor_kind +
                         "; ingot runs tensor outputs only");
    }
    e->outputs_.push_back(IoInfo{v.name, v.dtype, v.shape, model_dtype(e->opts_.retyped_io.outputs, v)});
  }
  // On a device the CPU executor only infers shapes: it need not pre-pack weights for CPU kernels.
  auto ex = GraphExecutor::create(g, e->model_.opsets, "cpu", /*prepare_constants=*/!cuda);
  if (!ex) return ex.status().with_context(e->model_.path + ": ");
  e->executor_ = std::move(*ex);
  auto max_bytes = e->max_value_bytes();  // its errors name the model already (infer_shapes)
  if (!max_bytes) return max_bytes.status();
  if (cuda) INGOT_RETURN_IF_ERROR(e->make_device_executor(*max_bytes).with_context(e->model_.path + ": "));
  else if (!max_bytes->empty()) e->plan_ = plan_memory(e->executor_->plan_input(*max_bytes));
  return e;
}

Status Engine::make_device_executor(const std::vector<int64_t>& max_bytes) {
  DeviceCreateOptions o;
  o.precision = opts_.precision;
  o.cuda_graph = opts_.cuda_graph;
  o.allow_tf32 = opts_.allow_tf32;
  o.max_bytes = max_bytes;
  o.tuning = opts_.device_tuning;
  auto d = find_device_backend(opts_.device)->create(model_.graph, model_.opsets, o);
  if (!d) return d.status();
  device_ = std::move(*d);
  if (const MemoryPlan* p = device_->memory_plan()) plan_ = *p;
  // Plan the shapes the engine is built for now, so unsupported shapes and CPU fallbacks show at
  // build time rather than at the first run.
  std::vector<std::map<std::string, Shape>> corners;
  for (const Profile& p : opts_.profiles) {
    corners.push_back(p.opt);
    corners.push_back(p.max);
  }
  if (corners.empty()) {
    std::map<std::string, Shape> declared;
    for (const IoInfo& io : inputs_) {
      if (!io.shape) return Status::ok();
      Shape& shape = declared[io.name];  // a scalar input has no dims but still a shape
      for (const Dim& d : *io.shape) {
        if (!d.known()) return Status::ok();
        shape.push_back(d.value);
      }
    }
    corners.push_back(declared);
  }
  for (const auto& c : corners) {
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    for (const IoInfo& io : inputs_) {
      dtypes.push_back(io.dtype);
      shapes.push_back(c.at(io.name));
    }
    INGOT_RETURN_IF_ERROR(device_->plan_shapes(dtypes, shapes));
  }
  return Status::ok();
}

namespace {
// A value's size in bytes, or -1 where shape inference could not tell it.
int64_t value_bytes(const ValueMeta& m) {
  return m.known && !m.dynamic ? shape_numel(m.shape) * int64_t(dtype_size(m.dtype)) : -1;
}
}  // namespace

// Per value, its largest size in bytes over the shapes the engine serves (every profile's max,
// or the declared shapes of a static model); -1 where unknown. Empty when shapes are unbounded.
Expected<std::vector<int64_t>> Engine::max_value_bytes() {
  // The shapes to size for: every profile's max, or the declared shapes of a static model.
  std::vector<std::map<std::string, Shape>> maxima;
  for (const Profile& p : opts_.profiles) maxima.push_back(p.max);
  if (maxima.empty()) {
    std::map<std::string, Shape> declared;
    for (const IoInfo& io : inputs_) {
      if (!io.shape) return std::vector<int64_t>{};
      Shape s;
      for (const Dim& d : *io.shape) {
        if (!d.known()) return std::vector<int64_t>{};  // dynamic and unbounded: no static plan
        s.push_back(d.value);
      }
      declared[io.name] = s;
    }
    maxima.push_back(declared);
  }
  std::vector<int64_t> max_bytes(model_.graph.values.size(), 0);
  for (const auto& shapes : maxima) {
    auto metas = infer_shapes(shapes);
    if (!metas) return metas.status();
    for (size_t v = 0; v < metas->size(); ++v) {
      const int64_t bytes = value_bytes((*metas)[v]);
      max_bytes[v] = bytes < 0 || max_bytes[v] < 0 ? -1 : std::max(max_bytes[v], bytes);
    }
  }
  return max_bytes;
}

int64_t Engine::weight_bytes() const {
  int64_t n = 0;
  for (const auto& [id, t] : model_.graph.initializers) n += int64_t(t.nbytes());
  return n;
}

Status Engine::check_profiles(const std::map<std::string, Tensor>& inputs) const {
  if (opts_.profiles.empty()) return Status::ok();
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : inputs) shapes[name] = t.shape();
  for (const Profile& p : opts_.profiles)
    if (profile_contains(p, shapes)) return Status::ok();
  // Name the first input that is outside the first profile.
  const Profile& p = opts_.profiles[0];
  for (const auto& [name, s] : shapes) {
    Profile one;
    one.min[name] = p.min.at(name);
    one.max[name] = p.max.at(name);
    if (!profile_contains(one, {{name, s}})) {
      return invalid_argument(model_.path + ": input '" + name + "' has shape " + shape_str(s) +
                              ", outside the engine's optimization profiles (" + describe_profiles(opts_.profiles) +
                              "); rebuild with a wider --max-shapes");
    }
  }
  return invalid_argument(model_.path + ": input shapes fit no single optimization profile (" +
                          describe_profiles(opts_.profiles) + ")");
}

const IoInfo* Engine::find_input(const std::string& name) const {
  for (const auto& i : inputs_) if (i.name == name) return &i;
  return nullptr;
}

std::unique_ptr<ExecutionContext> Engine::create_context() const {
  return std::make_unique<ExecutionContext>(shared_from_this());
}

static std::string input_names(const std::vector<IoInfo>& ios) {
  std::string s;
  for (const auto& i : ios) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

Status Engine::validate_inputs(const std::map<std::string, Tensor>& inputs) const {
  const std::string& m = model_.path;
  for (const auto& [name, t] : inputs) {
    if (!find_input(name)) {
      return invalid_argument(m + ": model has no input '" + name + "' (its inputs: " + input_names(inputs_) + ")");
    }
  }
  std::map<std::string, std::pair<int64_t, std::string>> symbols;  // symbol -> (value, input)
  for (const auto& io : inputs_) {
    auto it = inputs.find(io.name);
    if (it == inputs.end()) return invalid_argument(m + ": input '" + io.name + "' is missing");
    const Tensor& t = it->second;
    if (io.dtype != DType::kUndefined && t.dtype() != io.dtype) {
      return invalid_argument(m + ": input '" + io.name + "' has dtype " + dtype_name(t.dtype()) + ", expected " +
                              dtype_name(io.dtype) +
                              (io.model_dtype != io.dtype ? " (the engine was built with --io-precision fp16)" : ""));
    }
    if (!io.shape) continue;
    const SymShape& s = *io.shape;
    if (int(s.size()) != t.rank()) {
      return invalid_argument(m + ": input '" + io.name + "' has rank " + std::to_string(t.rank()) + " (shape " +
                              shape_str(t.shape()) + "), expected rank " + std::to_string(s.size()) + " " +
                              sym_shape_str(s));
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d].known() && s[d].value != t.dim(int(d))) {
        return invalid_argument(m + ": input '" + io.name + "' has shape " + shape_str(t.shape()) + ", expected " +
                                sym_shape_str(s) + " (dimension " + std::to_string(d) + " must be " +
                                std::to_string(s[d].value) + ")");
      }
      if (!s[d].symbol.empty()) {
        auto [sit, fresh] = symbols.emplace(s[d].symbol, std::make_pair(t.dim(int(d)), io.name));
        if (!fresh && sit->second.first != t.dim(int(d))) {
          return invalid_argument(m + ": inconsistent shapes: dimension '" + s[d].symbol + "' is " +
                                  std::to_string(sit->second.first) + " in input '" + sit->second.second + "' but " +
                                  std::to_string(t.dim(int(d))) + " in input '" + io.name + "' (shape " +
                                  shape_str(t.shape()) + ")");
        }
      }
    }
  }
  return Status::ok();
}

Expected<std::vector<ValueMeta>> Engine::infer_shapes(const std::map<std::string, Shape>& input_shapes) const {
  std::vector<ValueMeta> metas;
  for (const auto& io : inputs_) {
    auto it = input_shapes.find(io.name);
    if (it == input_shapes.end()) return invalid_argument(model_.path + ": no shape given for input '" + io.name + "'");
    ValueMeta vm;
    vm.known = true;
    vm.dtype = io.dtype;
    vm.shape = it->second;
    metas.push_back(vm);
  }
  auto r = executor_->infer(metas);
  if (!r) return r.status().with_context(model_.path + ": ");
  return r;
}

std::shared_ptr<const MemoryPlan> Engine::plan_for_shapes(const std::vector<Tensor>& inputs) const {
  static const bool off = [] {  // an A/B switch for developers
    const char* e = std::getenv("INGOT_PLAN_EACH_SHAPE");
    return e && std::string(e) == "0";
  }();
  if (!opts_.plan_each_shape || off || device_) return nullptr;
  std::vector<Shape> key;
  for (const Tensor& t : inputs) key.push_back(t.shape());
  std::lock_guard<std::mutex> lock(shape_plans_mu_);
  if (auto it = shape_plans_.find(key); it != shape_plans_.end()) return it->second;
  // Past the cap, the largest plan kept: a slot that is too small for a value at this shape sends
  // that value to the heap (ComputeContext::output), as a static plan does below its max shapes.
  if (shape_plans_.size() >= kMaxShapePlans) return largest_shape_plan_;
  std::map<std::string, Shape> shapes;
  for (size_t i = 0; i < inputs_.size() && i < key.size(); ++i) shapes[inputs_[i].name] = key[i];
  std::shared_ptr<const MemoryPlan> plan;
  if (auto metas = infer_shapes(shapes)) {
    std::vector<int64_t> bytes;
    for (const ValueMeta& m : *metas) bytes.push_back(value_bytes(m));
    auto p = std::make_shared<MemoryPlan>(plan_memory(executor_->plan_input(bytes)));
    if (p->arena_bytes > 0) plan = std::move(p);
  }
  // A shape that cannot be planned is remembered too, so it is not inferred again at every run.
  shape_plans_.emplace(std::move(key), plan);
  if (plan && (!largest_shape_plan_ || plan->arena_bytes > largest_shape_plan_->arena_bytes)) largest_shape_plan_ = plan;
  return plan;
}

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine) : engine_(std::move(engine)) {
  if (const DeviceExecutor* d = engine_->device()) {
    auto c = d->create_context();
    if (c) device_ = std::move(*c);
    else device_error_ = c.status().with_context(engine_->model_.path + ": ");
    return;
  }
  if (const MemoryPlan* plan = engine_->memory_plan()) arena_holds(plan->arena_bytes);
}

bool ExecutionContext::arena_holds(int64_t bytes) {
  if (bytes <= 0) return false;
  if (bytes <= arena_bytes_) return true;
  // Without the memory (host_memory.h) the context runs with per-op buffers, each of which
  // checks again, so a run at a smaller shape still works and a large one fails with an error.
  const size_t rounded = (size_t(bytes) + 63) / 64 * 64;
  if (!host_memory_available(rounded)) return false;
  std::byte* grown = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (!grown) return false;
  arena_.reset(grown);
  arena_bytes_ = bytes;
  return true;
}

Status Engine::tune(const std::map<std::string, Tensor>& inputs) {
  if (!device_) return Status::ok();
  INGOT_RETURN_IF_ERROR(validate_inputs(inputs));
  INGOT_RETURN_IF_ERROR(check_profiles(inputs));
  std::vector<Tensor> ordered;
  for (const auto& io : inputs_) ordered.push_back(inputs.at(io.name));
  auto tuned = device_->tune(ordered, opts_.device_tuning);
  if (!tuned) return tuned.status().with_context(model_.path + ": tuning: ");
  opts_.device_tuning = std::move(*tuned);
  return Status::ok();
}

std::optional<std::map<std::string, Tensor>> Engine::synthetic_inputs(const std::map<std::string, Shape>& shapes) const {
  std::map<std::string, Tensor> inputs;
  for (const IoInfo& io : inputs_) {
    Shape shape;
    if (auto it = shapes.find(io.name); it != shapes.end()) {
      shape = it->second;
    } else if (io.shape) {
      for (const Dim& d : *io.shape) {
        if (!d.known()) return std::nullopt;
        shape.push_back(d.value);
      }
    } else {
      return std::nullopt;
    }
    Tensor t(io.dtype, shape);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    const bool filled = dispatch_float(io.dtype,
                                       [&](auto tag) {
                                         using T = typename decltype(tag)::type;
                                         for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T(uniform(rng));
                                       }) ||
                        dispatch_all(io.dtype, [&](auto tag) {
                          using T = typename decltype(tag)::type;
                          for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = T(1);
                        });
    if (!filled) return std::nullopt;
    inputs.emplace(io.name, std::move(t));
  }
  return inputs;
}

Status Engine::tune_at_opt_shapes() {
  if (!device_) return Status::ok();
  std::vector<std::map<std::string, Shape>> opt_shapes;
  for (const Profile& p : opts_.profiles) opt_shapes.push_back(p.opt);
  if (opt_shapes.empty()) opt_shapes.emplace_back();
  for (const auto& opt : opt_shapes) {
    // No shape worth tuning for (dynamic inputs and no profile) or a dtype it cannot make up:
    // the engine is not tuned.
    auto inputs = synthetic_inputs(opt);
    if (!inputs) return Status::ok();
    INGOT_RETURN_IF_ERROR(tune(*inputs));
  }
  return Status::ok();
}

Expected<std::vector<NamedTensor>> ExecutionContext::run(const std::map<std::string, Tensor>& inputs) {
  const Engine& e = *engine_;
  INGOT_RETURN_IF_ERROR(e.validate_inputs(inputs));
  INGOT_RETURN_IF_ERROR(e.check_profiles(inputs));
  std::vector<Tensor> ordered;
  for (const auto& io : e.inputs_) ordered.push_back(inputs.at(io.name));
  Expected<std::vector<Tensor>> outs = std::vector<Tensor>{};
  if (e.device()) {
    if (!device_) return device_error_;
    outs = device_->run(ordered);
  } else {
    std::shared_ptr<const MemoryPlan> shaped;
    const MemoryPlan* plan = e.memory_plan();
    if (!plan) plan = (shaped = e.plan_for_shapes(ordered)).get();
    if (plan && !arena_holds(plan->arena_bytes)) plan = nullptr;
    outs = e.executor_->run(ordered, nullptr, plan, plan ? arena_.get() : nullptr);
  }
  if (!outs) return outs.status().with_context(e.model_.path + ": ");
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < outs->size(); ++i) named.push_back(NamedTensor{e.outputs_[i].name, std::move((*outs)[i])});
  return named;
}

}  // namespace ingot
