#include "backends/cuda/cuda_executor.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_tuning.h"
#include "backends/cuda/lt_gemm.h"
#include "io/mapped_file.h"

namespace ingot::cuda {
namespace {

// Device buffers are carved with this alignment: 16-byte vector loads, cuBLASLt's preferred
// pointer alignment and cuDNN's all hold.
constexpr int64_t kDeviceAlign = 256;

int64_t align_up(int64_t n) { return (n + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign; }

int64_t bytes_of(const ValueMeta& m) { return shape_numel(m.shape) * int64_t(dtype_size(m.dtype)); }

std::string shape_key(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) {
  std::string k;
  for (size_t i = 0; i < shapes.size(); ++i) {
    k += std::to_string(int(dtypes[i])) + ":";
    for (int64_t d : shapes[i]) k += std::to_string(d) + ",";
    k += ";";
  }
  return k;
}

int opset_of(const std::map<std::string, int64_t>& opsets, const std::string& domain) {
  auto it = opsets.find(domain);
  if (it != opsets.end()) return int(it->second);
  return domain.empty() ? 1 : 0;
}

}  // namespace

CudaExecutor::~CudaExecutor() = default;

Expected<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const Graph& graph,
                                                             const std::map<std::string, int64_t>& opsets,
                                                             const DeviceCreateOptions& options) {
  auto tactics = tactics_from_json(options.tuning);
  if (!tactics) return tactics.status();
  std::unique_ptr<CudaExecutor> ex(new CudaExecutor(graph, options));
  INGOT_RETURN_IF_ERROR(ex->load(opsets));
  add_gemm_tactics(*tactics);
  return ex;
}

Status CudaExecutor::load(const std::map<std::string, int64_t>& opsets) {
  cudaDeviceProp prop{};
  INGOT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, 0));
  sm_count_ = prop.multiProcessorCount;
  max_smem_per_block_ = int(prop.sharedMemPerBlockOptin);
  cc_major_ = prop.major;
  cc_minor_ = prop.minor;
  l2_bytes_ = prop.l2CacheSize;

  auto shapes = GraphExecutor::create(graph_, opsets, "cpu", /*prepare_constants=*/false);
  if (!shapes) return shapes.status();
  shapes_ = std::move(*shapes);

  nodes_.resize(graph_.nodes.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    NodeKernels& k = nodes_[i];
    k.opset = opset_of(opsets, n.domain);
    const CudaKernelFactory* f = CudaKernelRegistry::instance().find(n.domain, n.op_type);
    if (f) {
      auto kk = (*f)(n, k.opset);
      if (!kk) return kk.status().with_context(describe_node(n, int(i)) + ": ");
      k.cuda = std::move(*kk);
    } else {
      fallbacks_[int(i)] = FallbackOp{describe_node(n, int(i)), "no cuda kernel", -1};
    }
  }
  INGOT_RETURN_IF_ERROR(upload_weights());

  if (!opts_.max_bytes.empty()) {
    std::vector<int64_t> bytes = opts_.max_bytes;
    for (const auto& [id, t] : graph_.initializers) bytes[size_t(id)] = -1;
    static_plan_ = plan_memory(plan_input(bytes, nullptr));
    // What the CPU steps copy per run at the largest shapes: their non-constant inputs and outputs.
    for (auto& [ni, fb] : fallbacks_) {
      int64_t copy = 0;
      const Node& n = graph_.nodes[size_t(ni)];
      for (ValueId v : n.inputs)
        if (v != kNoValue && !graph_.initializers.count(v)) copy += std::max<int64_t>(opts_.max_bytes[size_t(v)], 0);
      for (ValueId v : n.outputs)
        if (v != kNoValue) copy += std::max<int64_t>(opts_.max_bytes[size_t(v)], 0);
      fb.copy_bytes = copy;
    }
  }
  return Status::ok();
}

// Every constant a CUDA kernel may read goes into one device buffer, once per engine; then each
// kernel's prepare() sees the host constants and may upload repacked copies of its own.
Status CudaExecutor::upload_weights() {
  int64_t total = 0;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    if (!nodes_[i].cuda) continue;
    for (ValueId v : graph_.nodes[i].inputs) {
      if (v == kNoValue || weight_offset_.count(v)) continue;
      auto it = graph_.initializers.find(v);
      if (it == graph_.initializers.end() || it->second.nbytes() == 0) continue;
      weight_offset_[v] = total;
      total += align_up(int64_t(it->second.nbytes()));
    }
  }
  auto buf = DeviceBuffer::allocate(size_t(total));
  if (!buf) return buf.status().with_context("weights: ");
  weights_ = std::move(*buf);
  for (const auto& [v, off] : weight_offset_) {
    const Tensor& t = graph_.initializers.at(v);
    INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy(weights() + off, t.raw(), t.nbytes(), cudaMemcpyHostToDevice));
  }
  auto upload = [this](const Tensor& host) -> Expected<Tensor> {
    auto b = DeviceBuffer::allocate(std::max<size_t>(host.nbytes(), 1));
    if (!b) return b.status();
    INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy(b->get(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice));
    Tensor t = Tensor::wrap(host.dtype(), host.shape(), b->get(), nullptr);
    kernel_buffer_bytes_ += int64_t(b->bytes());
    kernel_buffers_.push_back(std::move(*b));
    return t;
  };
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    if (!nodes_[i].cuda) continue;
    const Node& n = graph_.nodes[i];
    std::vector<const Tensor*> consts;
    for (ValueId v : n.inputs) {
      auto it = v == kNoValue ? graph_.initializers.end() : graph_.initializers.find(v);
      consts.push_back(it == graph_.initializers.end() ? nullptr : &it->second);
    }
    INGOT_RETURN_IF_ERROR(nodes_[i].cuda->prepare(CudaPrepareContext(consts, upload))
                              .with_context(describe_node(n, int(i)) + ": "));
  }
  // The device has the weights now: an engine file's mapped pages of them are handed back (a
  // CPU kernel or a plan-time look at a constant reads them from the file again).
  for (const auto& [v, off] : weight_offset_) {
    const Tensor& t = graph_.initializers.at(v);
    drop_file_pages(t.raw(), t.nbytes());
  }
  return Status::ok();
}

PlanInput CudaExecutor::plan_input(const std::vector<int64_t>& bytes, const std::vector<bool>* on_device) const {
  PlanInput in;
  in.graph = &graph_;
  in.order = shapes_->order();
  in.max_bytes = bytes;
  in.alias.resize(graph_.nodes.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    bool device = nodes_[i].cuda && (!on_device || (*on_device)[i]);
    for (size_t o = 0; o < graph_.nodes[i].outputs.size(); ++o)
      in.alias[i].push_back(device ? nodes_[i].cuda->output_aliases_input(int(o)) : -1);
  }
  return in;
}

Expected<const OpKernel*> CudaExecutor::cpu_kernel(int node) const {
  NodeKernels& k = nodes_[size_t(node)];
  if (k.cpu) return k.cpu.get();
  const Node& n = graph_.nodes[size_t(node)];
  auto kk = create_kernel("cpu", n, node, k.opset);
  if (!kk) return kk.status();
  std::vector<const Tensor*> consts;
  for (ValueId v : n.inputs) {
    auto it = v == kNoValue ? graph_.initializers.end() : graph_.initializers.find(v);
    consts.push_back(it == graph_.initializers.end() ? nullptr : &it->second);
  }
  INGOT_RETURN_IF_ERROR((*kk)->prepare(consts).with_context(describe_node(n, node) + ": "));
  k.cpu = std::move(*kk);
  return k.cpu.get();
}

std::vector<FallbackOp> CudaExecutor::fallback_ops() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FallbackOp> out;
  for (const auto& [i, f] : fallbacks_) out.push_back(f);
  return out;
}

Status CudaExecutor::plan_shapes(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) const {
  auto p = plan_for(dtypes, shapes);
  return p ? Status::ok() : p.status();
}

Expected<std::shared_ptr<const ShapePlan>> CudaExecutor::plan_for(const std::vector<DType>& dtypes,
                                                                  const std::vector<Shape>& shapes) const {
  std::string key = shape_key(dtypes, shapes);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  auto p = make_plan(dtypes, shapes, key);
  if (!p) return p.status();
  std::shared_ptr<const ShapePlan> plan = std::move(*p);
  plans_[key] = plan;
  return plan;
}

// Called with mu_ held.
Expected<std::shared_ptr<ShapePlan>> CudaExecutor::make_plan(const std::vector<DType>& dtypes,
                                                             const std::vector<Shape>& shapes,
                                                             const std::string& key) const {
  auto plan = std::make_shared<ShapePlan>();
  plan->key = key;
  std::vector<ValueMeta> in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ValueMeta m;
    m.known = true;
    m.dtype = dtypes[i];
    m.shape = shapes[i];
    in.push_back(m);
  }
  auto metas = shapes_->infer(in);
  if (!metas) return metas.status();
  plan->metas = std::move(*metas);
  const auto& M = plan->metas;

  auto host_value = [&](ValueId v) -> const Tensor* {
    auto it = graph_.initializers.find(v);
    if (it != graph_.initializers.end()) return &it->second;
    return M[size_t(v)].value ? M[size_t(v)].value.get() : nullptr;
  };

  std::vector<bool> on_device(graph_.nodes.size(), false);
  std::vector<bool> read_on_device(graph_.values.size(), false);
  for (int ni : shapes_->order()) {
    const Node& n = graph_.nodes[size_t(ni)];
    bool folded = true;
    for (ValueId o : n.outputs)
      if (o != kNoValue && !M[size_t(o)].value) folded = false;
    if (folded) continue;
    std::vector<InputMeta> ins;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ins.push_back({});
        continue;
      }
      const ValueMeta& m = M[size_t(v)];
      ins.push_back(InputMeta{true, m.dtype, m.shape, host_value(v)});
    }
    std::vector<OutputMeta> outs;
    for (ValueId o : n.outputs) {
      if (o == kNoValue) {
        outs.push_back({});
        continue;
      }
      const ValueMeta& m = M[size_t(o)];
      if (!m.known || m.dynamic) {
        return unsupported(describe_node(n, ni) + ": output '" + graph_.value(o).name +
                           "' has a shape that depends on input data; the cuda device needs every shape "
                           "to follow from the input shapes");
      }
      outs.push_back(OutputMeta{m.dtype, m.shape, false, true});
    }
    ShapePlan::Step step;
    step.node = ni;
    const NodeKernels& k = nodes_[size_t(ni)];
    if (k.cuda) {
      step.fallback_reason = k.cuda->supports(ins, outs);
      step.on_device = step.fallback_reason.empty();
    } else {
      step.on_device = false;
      step.fallback_reason = "no cuda kernel";
    }
    if (step.on_device) {
      step.view = true;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] != kNoValue && k.cuda->output_aliases_input(int(o)) < 0) step.view = false;
      plan->workspace_bytes = std::max(plan->workspace_bytes, k.cuda->workspace_bytes(ins, outs));
      for (ValueId v : n.inputs)
        if (v != kNoValue) read_on_device[size_t(v)] = true;
    } else {
      for (const auto& [name, a] : n.attrs.all())
        if (a.g || !a.graphs.empty())
          return unsupported(describe_node(n, ni) + ": control flow (subgraphs) is not supported on the cuda device");
      auto cpu = cpu_kernel(ni);
      if (!cpu) return cpu.status();
      plan->device_only = false;
      auto& fb = fallbacks_[ni];
      fb.node = describe_node(n, ni);
      fb.reason = step.fallback_reason;
    }
    on_device[size_t(ni)] = step.on_device;
    plan->steps.push_back(std::move(step));
  }

  // The arena: the engine's static plan when this shape fits it and every view it assumed is
  // still a view here; otherwise a plan for exactly these shapes.
  bool fits = static_plan_.has_value();
  for (size_t i = 0; fits && i < graph_.nodes.size(); ++i)
    if (nodes_[i].cuda && !on_device[i]) {
      for (size_t o = 0; o < graph_.nodes[i].outputs.size(); ++o)
        if (nodes_[i].cuda->output_aliases_input(int(o)) >= 0) fits = false;
    }
  if (fits) {
    for (size_t v = 0; v < M.size(); ++v)
      if (static_plan_->offset[v] >= 0 && M[v].known && !M[v].dynamic && bytes_of(M[v]) > static_plan_->capacity[v])
        fits = false;
  }
  if (fits) {
    plan->memory = *static_plan_;
    plan->uses_static_plan = true;
  } else {
    std::vector<int64_t> bytes(graph_.values.size(), -1);
    for (size_t v = 0; v < M.size(); ++v)
      if (M[v].known && !M[v].dynamic && !M[v].value && !graph_.initializers.count(ValueId(v))) bytes[v] = bytes_of(M[v]);
    plan->memory = plan_memory(plan_input(bytes, &on_device));
  }
  INGOT_RETURN_IF_ERROR(place_values(*plan, read_on_device));
  INGOT_RETURN_IF_ERROR(upload_constants(*plan));
  plan_prefetch(*plan);
  return plan;
}

// For each step whose kernel prefetches_l2(): the weights of the next product, that is, those
// its node reads late and those of the steps after it up to the first whose weights reach
// kProductBytes or the next such kernel (whose early weights are included). Asking for more (the
// product after it, the weights up to the second next such kernel) was slower: the next product
// then shares HBM with the prefetch. Nothing where that is more than half the L2 (a product that
// large streams at full bandwidth anyway, and the prefetch would evict what it reads), nor where
// the steps up to there move more activation bytes than a quarter of the L2: what they would
// find in L2 is worth more than the weights (BERT-base b32 on an H100: 15 us slower with it).
void CudaExecutor::plan_prefetch(ShapePlan& plan) const {
  constexpr int64_t kProductBytes = int64_t(256) << 10;
  if (!l2_prefetch_enabled() || l2_bytes_ <= 0) return;
  auto prefetching = [&](const ShapePlan::Step& s) {
    return s.on_device && !s.view && nodes_[size_t(s.node)].cuda->prefetches_l2();
  };
  // The step's weights (late or early ones) into `out`, their bytes into `bytes`; its other
  // values' bytes into `moved`.
  auto add = [&](const ShapePlan::Step& s, bool late, std::vector<ByteRange>& out, int64_t& bytes, int64_t& moved) {
    const Node& n = graph_.nodes[size_t(s.node)];
    const std::vector<int> late_inputs = nodes_[size_t(s.node)].cuda->late_inputs();
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      if (v == kNoValue) continue;
      const ValueHome& h = plan.homes[size_t(v)];
      if (h.kind != ValueHome::Kind::kWeight) {
        if (!late) moved += h.bytes;
        continue;
      }
      if ((std::find(late_inputs.begin(), late_inputs.end(), int(i)) != late_inputs.end()) != late) continue;
      out.push_back(ByteRange{h.offset, int64_t(graph_.initializers.at(v).nbytes())});
      bytes += out.back().bytes;
    }
    if (!late)
      for (ValueId v : n.outputs)
        if (v != kNoValue) moved += plan.homes[size_t(v)].bytes;
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (!prefetching(plan.steps[i])) continue;
    std::vector<ByteRange> late, next;
    int64_t late_bytes = 0, bytes = 0, moved = 0;
    add(plan.steps[i], /*late=*/true, late, late_bytes, moved);
    for (size_t j = i + 1; j < plan.steps.size() && late_bytes + bytes < kProductBytes; ++j) {
      const ShapePlan::Step& s = plan.steps[j];
      if (!s.on_device || s.view) continue;
      add(s, /*late=*/false, next, bytes, moved);
      if (prefetching(s) || late_bytes + bytes >= kProductBytes) break;
      add(s, /*late=*/true, next, bytes, moved);
    }
    if (late_bytes + bytes > l2_bytes_ / 2 || moved > l2_bytes_ / 4) continue;
    ShapePlan::Step& step = plan.steps[i];
    if (nodes_[size_t(step.node)].cuda->prefetches_l2_after()) {
      // The late inputs for the first kernel, the next steps' weights for the last.
      step.prefetch = prefetch_ranges(std::move(late), late_bytes);
      step.prefetch_after = prefetch_ranges(std::move(next), bytes);
    } else {
      late.insert(late.end(), next.begin(), next.end());
      step.prefetch = prefetch_ranges(std::move(late), late_bytes + bytes);
    }
  }
}

// Gives every value a home (see ValueHome).
Status CudaExecutor::place_values(ShapePlan& plan, const std::vector<bool>& read_on_device) const {
  const auto& M = plan.metas;
  auto& H = plan.homes;
  H.assign(graph_.values.size(), ValueHome{});
  for (ValueId v : graph_.inputs) H[size_t(v)] = ValueHome{ValueHome::Kind::kOwn, 0, bytes_of(M[size_t(v)]), kNoValue};
  for (size_t v = 0; v < M.size(); ++v) {
    if (graph_.initializers.count(ValueId(v))) {
      auto w = weight_offset_.find(ValueId(v));
      H[v] = w != weight_offset_.end() ? ValueHome{ValueHome::Kind::kWeight, w->second, 0, kNoValue}
                                       : ValueHome{ValueHome::Kind::kHost, 0, 0, kNoValue};
    } else if (M[v].value) {
      H[v] = ValueHome{ValueHome::Kind::kHost, 0, 0, kNoValue};
    }
  }
  auto root_of = [&](ValueId v) { return H[size_t(v)].kind == ValueHome::Kind::kView ? H[size_t(v)].root : v; };
  for (const ShapePlan::Step& s : plan.steps) {
    const Node& n = graph_.nodes[size_t(s.node)];
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      ValueId v = n.outputs[o];
      if (v == kNoValue) continue;
      int a = s.on_device ? nodes_[size_t(s.node)].cuda->output_aliases_input(int(o)) : -1;
      if (a >= 0 && size_t(a) < n.inputs.size() && n.inputs[size_t(a)] != kNoValue) {
        ValueId r = root_of(n.inputs[size_t(a)]);
        if (H[size_t(r)].kind == ValueHome::Kind::kHost) {
          // A view of a host constant read on the device: the constant must be uploaded.
          H[size_t(r)].kind = ValueHome::Kind::kConstant;
        }
        H[size_t(v)] = ValueHome{ValueHome::Kind::kView, 0, 0, r};
        int64_t b = bytes_of(M[size_t(v)]);
        if (H[size_t(r)].kind == ValueHome::Kind::kOwn) H[size_t(r)].bytes = std::max(H[size_t(r)].bytes, b);
        continue;
      }
      int64_t off = plan.memory.offset[size_t(v)];
      if (off >= 0) H[size_t(v)] = ValueHome{ValueHome::Kind::kArena, off, bytes_of(M[size_t(v)]), kNoValue};
      else H[size_t(v)] = ValueHome{ValueHome::Kind::kOwn, 0, bytes_of(M[size_t(v)]), kNoValue};
    }
  }
  // A view's root that the memory plan put in the arena keeps its offset; the group's views
  // were sized into its capacity by the planner. Host constants read by CUDA kernels are uploaded.
  for (size_t v = 0; v < H.size(); ++v)
    if (read_on_device[v] && H[v].kind == ValueHome::Kind::kHost) H[v].kind = ValueHome::Kind::kConstant;
  for (size_t v = 0; v < H.size(); ++v)
    if (H[v].kind == ValueHome::Kind::kOwn) plan.own_bytes += align_up(H[v].bytes);
  return Status::ok();
}

Status CudaExecutor::upload_constants(ShapePlan& plan) const {
  int64_t total = 0;
  for (size_t v = 0; v < plan.homes.size(); ++v) {
    ValueHome& h = plan.homes[v];
    if (h.kind != ValueHome::Kind::kConstant) continue;
    h.offset = total;
    h.bytes = bytes_of(plan.metas[v]);
    total += align_up(h.bytes);
  }
  if (total == 0) return Status::ok();
  auto buf = DeviceBuffer::allocate(size_t(total));
  if (!buf) return buf.status().with_context("constants: ");
  plan.constants = std::move(*buf);
  for (size_t v = 0; v < plan.homes.size(); ++v) {
    const ValueHome& h = plan.homes[v];
    if (h.kind != ValueHome::Kind::kConstant || h.bytes == 0) continue;
    const Tensor* t = plan.metas[v].value.get();
    auto it = graph_.initializers.find(ValueId(v));
    if (it != graph_.initializers.end()) t = &it->second;
    if (!t) return internal_error("constant '" + graph_.value(ValueId(v)).name + "' has no host value");
    INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy(static_cast<std::byte*>(plan.constants.get()) + h.offset, t->raw(),
                                          t->nbytes(), cudaMemcpyHostToDevice));
  }
  return Status::ok();
}

DeviceMemoryReport CudaExecutor::memory() const {
  DeviceMemoryReport r;
  r.weights = int64_t(weights_.bytes()) + kernel_buffer_bytes_;
  return r;
}

}  // namespace ingot::cuda
