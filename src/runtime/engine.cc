#include "runtime/engine.h"

#include "onnx_import/import.h"
#include "runtime/parallel.h"

namespace ingot {

Expected<std::shared_ptr<Engine>> Engine::load(const std::string& path, const EngineOptions& opts) {
  // Engine files (.ingot) arrive with the engine-file work; everything else is read as ONNX.
  return from_onnx(path, opts);
}

Expected<std::shared_ptr<Engine>> Engine::from_onnx(const std::string& path, const EngineOptions& opts) {
  auto m = load_onnx(path);
  if (!m) return m.status();
  return from_model(std::move(*m), opts);
}

Expected<std::shared_ptr<Engine>> Engine::from_model(Model model, const EngineOptions& opts) {
  if (opts.device != "cpu") return invalid_argument("device '" + opts.device + "' is not available (expected cpu)");
  std::shared_ptr<Engine> e(new Engine());
  e->model_ = std::move(model);
  e->opts_ = opts;
  if (opts.threads > 0) set_num_threads(opts.threads);
  if (opts.optimize) {
    OptimizeOptions oo;
    oo.disabled = opts.disabled_passes;
    oo.bindings = opts.shape_bindings;
    auto reports = optimize(e->model_, oo);
    if (!reports) return reports.status().with_context(e->model_.path + ": ");
    e->pass_reports_ = std::move(*reports);
  }
  const Graph& g = e->model_.graph;
  for (ValueId id : g.inputs) {
    const ValueInfo& v = g.value(id);
    if (!v.non_tensor_kind.empty()) {
      return unsupported(e->model_.path + ": input '" + v.name + "' is a " + v.non_tensor_kind +
                         "; ingot runs tensor inputs only");
    }
    if (v.dtype == DType::kString) return unsupported(e->model_.path + ": input '" + v.name + "' is a string tensor; ingot does not support strings");
    e->inputs_.push_back(IoInfo{v.name, v.dtype, v.shape});
  }
  for (ValueId id : g.outputs) {
    const ValueInfo& v = g.value(id);
    if (!v.non_tensor_kind.empty()) {
      return unsupported(e->model_.path + ": output '" + v.name + "' is a " + v.non_tensor_kind +
                         "; ingot runs tensor outputs only");
    }
    e->outputs_.push_back(IoInfo{v.name, v.dtype, v.shape});
  }
  auto ex = GraphExecutor::create(g, e->model_.opsets, opts.device);
  if (!ex) return ex.status().with_context(e->model_.path + ": ");
  e->executor_ = std::move(*ex);
  return e;
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
                              dtype_name(io.dtype));
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

Expected<std::vector<NamedTensor>> ExecutionContext::run(const std::map<std::string, Tensor>& inputs) {
  const Engine& e = *engine_;
  INGOT_RETURN_IF_ERROR(e.validate_inputs(inputs));
  std::vector<Tensor> ordered;
  for (const auto& io : e.inputs_) ordered.push_back(inputs.at(io.name));
  auto outs = e.executor_->run(ordered, nullptr);
  if (!outs) return outs.status().with_context(e.model_.path + ": ");
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < outs->size(); ++i) named.push_back(NamedTensor{e.outputs_[i].name, std::move((*outs)[i])});
  return named;
}

}  // namespace ingot
