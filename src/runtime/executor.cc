#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <queue>
#include <set>

namespace ingot {
namespace {

// "float32 32x128x768, int64 32x128": what a node's outputs take, for an out-of-memory error.
std::string describe_outputs(const std::vector<OutputMeta>& outs) {
  std::string s;
  for (const OutputMeta& o : outs) {
    if (!o.set) continue;
    s += (s.empty() ? "" : ", ") + dtype_name(o.dtype) + " " +
         (o.dynamic ? std::string("of a data-dependent shape") : shape_str(o.shape));
  }
  return s.empty() ? "none inferred" : s;
}

// INGOT_CPU_PROFILE=1: wall time per op type over every top-level run, printed at exit (the CPU
// counterpart of INGOT_CUDA_PROFILE); INGOT_CPU_PROFILE=nodes: per node instead (its op type, name
// and first output's shape: which layer of a model is slow). Nodes of subgraphs count inside their
// If/Loop node too.
class CpuProfile {
 public:
  static CpuProfile* active() {
    static CpuProfile* p = [] {
      const char* e = std::getenv("INGOT_CPU_PROFILE");
      return e && *e && std::string(e) != "0" ? new CpuProfile(std::string(e) == "nodes") : nullptr;
    }();
    return p;
  }
  bool per_node() const { return per_node_; }
  void add(const std::string& op, double ms) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& t = ops_[op];
    t.first += ms;
    ++t.second;
  }
  void end_run() {
    std::lock_guard<std::mutex> lock(mu_);
    ++runs_;
  }

 private:
  explicit CpuProfile(bool per_node) : per_node_(per_node) { std::atexit([] { active()->print(); }); }
  void print() {
    std::lock_guard<std::mutex> lock(mu_);
    if (runs_ == 0) return;
    std::vector<std::pair<std::string, std::pair<double, int64_t>>> rows(ops_.begin(), ops_.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    double total = 0;
    for (const auto& r : rows) total += r.second.first;
    std::fprintf(stderr, "ingot: CPU profile over %lld run(s) (all shapes together):\n", static_cast<long long>(runs_));
    std::fprintf(stderr, "  %-28s %9s %12s %12s %7s\n", per_node_ ? "node" : "op", "per run", "ms per run", "us each",
                 "share");
    for (const auto& [op, t] : rows)
      std::fprintf(stderr, "  %-28s %9.1f %12.4f %12.2f %6.1f%%\n", op.c_str(), double(t.second) / double(runs_),
                   t.first / double(runs_), 1000.0 * t.first / double(t.second), 100.0 * t.first / total);
    std::fprintf(stderr, "  %-28s %9s %12.4f\n", "total", "", total / double(runs_));
  }
  const bool per_node_;
  std::mutex mu_;
  std::map<std::string, std::pair<double, int64_t>> ops_;
  int64_t runs_ = 0;
};

// Folding limit: bigger constant results are computed at run time instead of stored.
constexpr int64_t kMaxFoldElements = 1 << 16;

Status check_output(const Node& node, int i, const OutputMeta& meta, const Tensor& t) {
  if (!t.defined()) return internal_error("kernel produced no output " + std::to_string(i));
  if (meta.set && t.dtype() != meta.dtype) {
    return internal_error("output " + std::to_string(i) + " has dtype " + dtype_name(t.dtype()) +
                          " but infer() said " + dtype_name(meta.dtype));
  }
  if (meta.set && !meta.dynamic && t.shape() != meta.shape) {
    return internal_error("output " + std::to_string(i) + " has shape " + shape_str(t.shape()) +
                          " but infer() said " + shape_str(meta.shape));
  }
  (void)node;
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<GraphExecutor>> GraphExecutor::create(const Graph& graph,
                                                                const std::map<std::string, int64_t>& opsets,
                                                                const std::string& backend, bool prepare_constants) {
  std::unique_ptr<GraphExecutor> ex(new GraphExecutor(graph));
  INGOT_RETURN_IF_ERROR(ex->prepare(opsets, backend, prepare_constants));
  return ex;
}

Status GraphExecutor::prepare(const std::map<std::string, int64_t>& opsets, const std::string& backend,
                              bool prepare_constants) {
  const auto& nodes = graph_.nodes;
  // Topological order (Kahn), stable with respect to file order.
  std::vector<int> producer(graph_.values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId o : nodes[i].outputs)
      if (o != kNoValue) producer[size_t(o)] = int(i);
  std::vector<int> indegree(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  // Subgraph captures also create dependencies on the enclosing graph's values.
  auto node_reads = [&](const Node& n) {
    std::vector<ValueId> reads;
    for (ValueId v : n.inputs) if (v != kNoValue) reads.push_back(v);
    std::function<void(const Graph&)> add_captures = [&](const Graph& g) {
      for (ValueId c : g.captures) {
        ValueId mine = graph_.find(g.value(c).name);
        if (mine != kNoValue) reads.push_back(mine);
      }
      for (const auto& sn : g.nodes)
        for (const auto& [k, a] : sn.attrs.all()) {
          if (a.g) add_captures(*a.g);
          for (const auto& sg : a.graphs) add_captures(*sg);
        }
    };
    for (const auto& [k, a] : n.attrs.all()) {
      if (a.g) add_captures(*a.g);
      for (const auto& sg : a.graphs) add_captures(*sg);
    }
    return reads;
  };
  std::vector<std::vector<ValueId>> reads(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    reads[i] = node_reads(nodes[i]);
    std::set<int> deps;
    for (ValueId v : reads[i]) {
      int p = producer[size_t(v)];
      if (p >= 0 && p != int(i)) deps.insert(p);
    }
    indegree[i] = int(deps.size());
    for (int p : deps) users[size_t(p)].push_back(int(i));
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) if (indegree[i] == 0) ready.push(int(i));
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order_.push_back(n);
    for (int u : users[size_t(n)]) if (--indegree[size_t(u)] == 0) ready.push(u);
  }
  if (order_.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (indegree[i] > 0) return invalid_model(describe_node(nodes[i], int(i)) + ": the graph has a cycle through this node");
  }

  kernels_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    int64_t opset = 0;
    auto it = opsets.find(n.domain);
    if (it != opsets.end()) opset = it->second;
    else if (n.domain.empty()) opset = 1;
    else {
      return invalid_model(describe_node(n, int(i)) + ": domain '" + n.domain +
                           "' is not imported by the model's opset_import");
    }
    auto k = create_kernel(backend, n, int(i), int(opset));
    if (!k) return k.status();
    kernels_[i] = std::move(*k);
    std::vector<const Tensor*> consts;
    for (ValueId v : n.inputs) {
      if (!prepare_constants) break;
      auto c = v == kNoValue ? graph_.initializers.end() : graph_.initializers.find(v);
      consts.push_back(c == graph_.initializers.end() ? nullptr : &c->second);
    }
    if (prepare_constants)
      INGOT_RETURN_IF_ERROR(kernels_[i]->prepare(consts).with_context(describe_node(n, int(i)) + ": "));
    for (const auto& [name, a] : n.attrs.all()) {
      std::vector<const Graph*> gs;
      if (a.g) gs.push_back(a.g.get());
      for (const auto& sg : a.graphs) gs.push_back(sg.get());
      for (const Graph* g : gs) {
        auto sub = GraphExecutor::create(*g, opsets, backend, prepare_constants);
        if (!sub) return sub.status().with_context(describe_node(n, int(i)) + ", attribute '" + name + "': ");
        subgraphs_[g] = std::move(*sub);
      }
    }
  }

  // Liveness: free each value after its last reader, never graph outputs.
  std::vector<int> last_use(graph_.values.size(), -1);
  for (size_t pos = 0; pos < order_.size(); ++pos)
    for (ValueId v : reads[size_t(order_[pos])]) last_use[size_t(v)] = int(pos);
  for (ValueId o : graph_.outputs) last_use[size_t(o)] = int(order_.size());
  frees_.assign(order_.size(), {});
  for (size_t v = 0; v < last_use.size(); ++v) {
    if (graph_.initializers.count(ValueId(v))) continue;
    if (last_use[v] >= 0 && last_use[v] < int(order_.size())) frees_[size_t(last_use[v])].push_back(ValueId(v));
  }
  return Status::ok();
}

SubgraphRunner GraphExecutor::subgraph_runner(const std::vector<Tensor>& env, const OuterLookup& outer) const {
  return [this, &env, &outer](const Graph& body, const std::vector<Tensor>& inputs) -> Expected<std::vector<Tensor>> {
    auto it = subgraphs_.find(&body);
    if (it == subgraphs_.end()) return internal_error("subgraph was not prepared");
    OuterLookup lookup = [this, &env, &outer](const std::string& name) -> const Tensor* {
      ValueId id = graph_.find(name);
      if (id != kNoValue && env[size_t(id)].defined()) return &env[size_t(id)];
      return outer ? outer(name) : nullptr;
    };
    return it->second->run(inputs, lookup);
  };
}

PlanInput GraphExecutor::plan_input(const std::vector<int64_t>& max_bytes) const {
  PlanInput in;
  in.graph = &graph_;
  in.order = order_;
  in.max_bytes = max_bytes;
  in.alias.resize(graph_.nodes.size());
  in.in_place.resize(graph_.nodes.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i)
    for (size_t o = 0; o < graph_.nodes[i].outputs.size(); ++o) {
      in.alias[i].push_back(kernels_[i]->output_aliases_input(int(o)));
      in.in_place[i].push_back(kernels_[i]->output_may_overwrite_input(int(o)));
    }
  return in;
}

Status GraphExecutor::run_node(size_t pos, std::vector<Tensor>& env, const OuterLookup& outer,
                               const MemoryPlan* plan, std::byte* arena) const {
  int idx = order_[pos];
  const Node& node = graph_.nodes[size_t(idx)];
  const OpKernel& k = *kernels_[size_t(idx)];
  std::vector<InputMeta> metas;
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId v = node.inputs[i];
    if (v == kNoValue) {
      metas.push_back({});
      ins.push_back(nullptr);
      continue;
    }
    const Tensor* t = &env[size_t(v)];
    if (!t->defined()) {
      return internal_error(describe_node(node, idx) + ": input '" + graph_.value(v).name + "' was not computed");
    }
    metas.push_back(InputMeta{true, t->dtype(), t->shape(), t});
    ins.push_back(t);
  }
  InferContext ictx(node, std::move(metas), int(node.outputs.size()));
  std::string where = describe_node(node, idx) + ": ";
  INGOT_RETURN_IF_ERROR(k.infer(ictx).with_context(where));
  std::vector<OutputSlot> slots(node.outputs.size());
  if (plan) {
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId v = node.outputs[i];
      if (v == kNoValue || plan->offset[size_t(v)] < 0) continue;
      slots[i] = OutputSlot{arena + plan->offset[size_t(v)], size_t(plan->capacity[size_t(v)]),
                            k.writes_every_output_element()};
      for (const Tensor* t : ins)
        if (t && t->raw() == slots[i].data) slots[i].keep_contents = true;
    }
  }
  ComputeContext cctx(node, std::move(ins), ictx.outputs(), subgraph_runner(env, outer), slots);
  try {
    INGOT_RETURN_IF_ERROR(k.compute(cctx).with_context(where));
  } catch (const std::bad_alloc&) {
    return out_of_memory(where + "out of host memory for its outputs (" + describe_outputs(ictx.outputs()) +
                         ") and its scratch");
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueId v = node.outputs[i];
    if (v == kNoValue) continue;
    Tensor& t = cctx.outputs()[i];
    INGOT_RETURN_IF_ERROR(check_output(node, int(i), ictx.outputs()[i], t).with_context(where));
    if (plan) {
      // A view the planner did not know about may point into a slot that is reused later, and
      // values outside the arena must never point into it: give those their own memory.
      auto* p = static_cast<std::byte*>(t.raw());
      bool in_arena = p >= arena && p < arena + plan->arena_bytes;
      if (in_arena && p != slots[i].data) {
        if (slots[i].data && t.nbytes() <= slots[i].capacity) {
          std::memmove(slots[i].data, p, t.nbytes());
          t = Tensor::wrap(t.dtype(), t.shape(), slots[i].data, nullptr);
        } else {
          t = t.clone();
        }
      }
    }
    env[size_t(v)] = std::move(t);
  }
  return Status::ok();
}

Expected<std::vector<Tensor>> GraphExecutor::run(const std::vector<Tensor>& inputs, const OuterLookup& outer,
                                                  const MemoryPlan* plan, std::byte* arena) const {
  std::vector<Tensor> env(graph_.values.size());
  for (const auto& [id, t] : graph_.initializers) env[size_t(id)] = t;
  if (inputs.size() < graph_.inputs.size()) {
    return invalid_argument("graph '" + graph_.name + "' needs " + std::to_string(graph_.inputs.size()) +
                            " inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < graph_.inputs.size(); ++i) env[size_t(graph_.inputs[i])] = inputs[i];
  for (ValueId c : graph_.captures) {
    const Tensor* t = outer ? outer(graph_.value(c).name) : nullptr;
    if (!t) return invalid_model("subgraph '" + graph_.name + "' reads '" + graph_.value(c).name + "', which is not defined");
    env[size_t(c)] = *t;
  }
  CpuProfile* profile = CpuProfile::active();
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    INGOT_RETURN_IF_ERROR(run_node(pos, env, outer, plan, arena));
    if (profile) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const Node& n = graph_.nodes[size_t(order_[pos])];
      std::string key = (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
      if (profile->per_node()) {
        const Tensor* out = n.outputs.empty() || n.outputs[0] == kNoValue ? nullptr : &env[size_t(n.outputs[0])];
        key += " " + n.name + (out && out->defined() ? " " + shape_str(out->shape()) : "");
      }
      profile->add(key, ms);
    }
    for (ValueId v : frees_[pos]) env[size_t(v)] = Tensor();
  }
  if (profile && !outer) profile->end_run();
  std::vector<Tensor> outs;
  for (ValueId o : graph_.outputs) {
    if (!env[size_t(o)].defined()) return internal_error("graph output '" + graph_.value(o).name + "' was not computed");
    outs.push_back(env[size_t(o)]);
  }
  return outs;
}

Expected<std::vector<ValueMeta>> GraphExecutor::infer(const std::vector<ValueMeta>& inputs) const {
  std::vector<ValueMeta> vm(graph_.values.size());
  for (const auto& [id, t] : graph_.initializers) {
    auto& m = vm[size_t(id)];
    m.known = true;
    m.dtype = t.dtype();
    m.shape = t.shape();
    m.value = std::make_shared<const Tensor>(t);
  }
  for (size_t i = 0; i < graph_.inputs.size() && i < inputs.size(); ++i) vm[size_t(graph_.inputs[i])] = inputs[i];
  for (ValueId c : graph_.captures) vm[size_t(c)].dynamic = true;  // outer values: unknown here

  for (int idx : order_) {
    const Node& node = graph_.nodes[size_t(idx)];
    const OpKernel& k = *kernels_[size_t(idx)];
    std::string where = describe_node(node, idx) + ": ";
    bool any_dynamic = false, all_values = k.deterministic();
    std::vector<InputMeta> metas;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId v = node.inputs[i];
      if (v == kNoValue) {
        metas.push_back({});
        continue;
      }
      const ValueMeta& m = vm[size_t(v)];
      if (!m.known || m.dynamic) {
        any_dynamic = true;
        break;
      }
      if (!m.value && k.reads_input_data(int(i))) all_values = false;
      metas.push_back(InputMeta{true, m.dtype, m.shape, m.value.get()});
    }
    bool has_subgraph = false;
    for (const auto& [n, a] : node.attrs.all()) has_subgraph |= a.g != nullptr || !a.graphs.empty();
    if (any_dynamic || has_subgraph) {
      for (ValueId o : node.outputs) if (o != kNoValue) vm[size_t(o)].dynamic = true;
      continue;
    }
    InferContext ictx(node, metas, int(node.outputs.size()));
    INGOT_RETURN_IF_ERROR(k.infer(ictx).with_context(where));
    int64_t out_elems = 0;
    bool out_dynamic = false;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const OutputMeta& om = ictx.outputs()[i];
      if (node.outputs[i] == kNoValue) continue;
      if (!om.set) return internal_error(where + "infer() did not set output " + std::to_string(i));
      auto& m = vm[size_t(node.outputs[i])];
      m.known = true;
      m.dtype = om.dtype;
      m.shape = om.shape;
      m.dynamic = om.dynamic;
      out_dynamic |= om.dynamic;
      if (!om.dynamic) out_elems += shape_numel(om.shape);
    }
    if (all_values && !out_dynamic && out_elems <= kMaxFoldElements) {
      std::vector<const Tensor*> ins;
      std::vector<Tensor> shape_only;  // for inputs whose data is never read
      shape_only.reserve(metas.size());
      for (const auto& m : metas) {
        if (!m.present) ins.push_back(nullptr);
        else if (m.value) ins.push_back(m.value);
        else {
          shape_only.push_back(Tensor::wrap(m.dtype, m.shape, nullptr, nullptr));
          ins.push_back(&shape_only.back());
        }
      }
      ComputeContext cctx(node, ins, ictx.outputs(), nullptr);
      INGOT_RETURN_IF_ERROR(k.compute(cctx).with_context(where));
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] == kNoValue) continue;
        vm[size_t(node.outputs[i])].value = std::make_shared<const Tensor>(std::move(cctx.outputs()[i]));
      }
    }
  }
  return vm;
}

}  // namespace ingot
