// A CUDA execution context: one stream with its library handles, the activation arena, the
// shared kernel workspace and cuBLASLt's own, and per shape plan an instance with its own
// buffers, pinned staging memory and (when the whole plan runs on the GPU) a captured CUDA graph.
//
// A run: inputs are copied into pinned memory and sent with async copies (large ones in pieces,
// copied by the host's threads while the piece before is sent); the graph is replayed (or, on a
// shape's first run and for plans with CPU steps, the kernels are enqueued one by one); outputs
// come back through pinned memory (large ones straight into the block handed out); one
// synchronisation at the end. CUDA events around each phase give the device times that
// `ingot bench` reports next to host latency.
#include "backends/cuda/cuda_context.h"

#include "backends/cuda/cuda_dependent_launch.h"
#include "backends/cuda/cuda_graph_gemm_clears.h"
#include "backends/cuda/cuda_graph_memset.h"
#include "backends/cuda/cuda_stream_hold.h"

#include "backends/cuda/lt_gemm.h"
#include "runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

namespace ingot::cuda {
namespace {

std::byte* at(void* base, int64_t off) { return static_cast<std::byte*>(base) + off; }

// The op types of a comma list (a timing aid's variable).
std::set<std::string> op_types_in(const char* list) {
  std::set<std::string> out;
  std::stringstream in(list);
  for (std::string op; std::getline(in, op, ',');)
    if (!op.empty()) out.insert(op);
  return out;
}

// Host memory for one output of a run, never zero-filled. The block of the shape's previous run
// is handed out again when the caller has let go of that output (no Tensor, numpy array or copy
// still holds it): a fresh allocation of a large output costs a page fault per 4 KB on first
// touch, which for DistilGPT2's float32 logits at batch 32 (823 MB) was most of a 625 ms
// end-to-end run. Outputs of at least kPinnedOutputBytes live in pinned memory, which the
// device-to-host copy fills directly when the block is free at enqueue time; smaller ones, and a
// run whose caller still holds the pinned block, come through the pinned staging and a host copy
// (a pinned allocation costs far more than that copy for small outputs, and pinning a new block
// for every held output would cost more than the page faults it saves).
constexpr size_t kPinnedOutputBytes = size_t(1) << 20;

struct HostBlock {
  std::shared_ptr<void> memory;
  size_t bytes = 0;
};
// Per graph output: the pinned block, and the pageable one that takes the output of a run whose
// caller still holds the pinned block (or of a small output).
struct OutputBlocks {
  HostBlock pinned, pageable;
};

// Whether the cached block may take this run's output: nobody else holds it and it is large
// enough. The caller's last reference may have been dropped on another thread: its release (the
// reference count's decrement) happens before the writes that reuse the memory.
bool reusable(const HostBlock& cached, size_t bytes) {
  if (!cached.memory || cached.memory.use_count() != 1 || cached.bytes < bytes) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

// A block for an output that came through the staging; null when the host has no memory for it.
std::shared_ptr<void> host_block_for(OutputBlocks& cached, size_t bytes) {
  if (reusable(cached.pageable, bytes)) return cached.pageable.memory;
  const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (bytes >= kPinnedOutputBytes && cached.pinned.bytes < bytes) {  // none yet, or too small
    void* p = nullptr;
    if (cudaHostAlloc(&p, alloc, cudaHostAllocDefault) == cudaSuccess) {
      cached.pinned.memory = std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
      cached.pinned.bytes = alloc;
      return cached.pinned.memory;
    }
    cudaGetLastError();  // no pinned memory left: pageable memory below
  }
  void* p = std::aligned_alloc(64, alloc);
  if (!p) return nullptr;
  cached.pageable.memory = std::shared_ptr<void>(p, std::free);
  cached.pageable.bytes = alloc;
  return cached.pageable.memory;
}

// An input into its pinned staging, then to the device. A large input goes in pieces: the host's
// threads copy a piece (parallel_for) while the device takes the one before, so that a batch of
// images (ResNet-50 at batch 32: 19 MB) is not one single-threaded copy followed by the transfer.
// Pieces below kThreadedCopy are copied by the calling thread: a parallel region costs
// microseconds, more than such a copy (a transformer's ids at batch 1 are 1 KB).
constexpr size_t kInputPiece = size_t(4) << 20, kCopyBlock = size_t(64) << 10, kThreadedCopy = size_t(256) << 10;

Status send_input(std::byte* stage, const std::byte* src, void* dst, size_t bytes, cudaStream_t st) {
  for (size_t off = 0; off < bytes; off += kInputPiece) {
    const size_t n = std::min(kInputPiece, bytes - off);
    if (n < kThreadedCopy) {
      std::memcpy(stage + off, src + off, n);
    } else {
      parallel_for(int64_t((n + kCopyBlock - 1) / kCopyBlock), int64_t(kCopyBlock), [&](int64_t b, int64_t e) {
        const size_t lo = size_t(b) * kCopyBlock, hi = std::min(n, size_t(e) * kCopyBlock);
        std::memcpy(stage + off + lo, src + off + lo, hi - lo);
      });
    }
    INGOT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(static_cast<std::byte*>(dst) + off, stage + off, n, cudaMemcpyHostToDevice, st));
  }
  return Status::ok();
}

}  // namespace

struct CudaContext::Instance {
  std::shared_ptr<const ShapePlan> plan;
  std::vector<DeviceBuffer> own;  // kOwn buffers
  std::vector<Tensor> dev;        // per value: a view of its device memory (undefined if none)
  struct Bound {
    std::vector<const Tensor*> in, host;
    std::vector<Tensor*> out;
    L2Prefetch prefetch, prefetch_after;  // the step's ShapePlan::Step::prefetch(_after), as pointers
  };
  std::vector<Bound> bound;  // per step
  void* pinned = nullptr;    // staging for inputs, then outputs
  std::vector<int64_t> pinned_in, pinned_out;  // offsets per graph input / output
  std::vector<OutputBlocks> host_out;          // per graph output: the host memory it comes back in
  int runs = 0;
  cudaGraphExec_t exec = nullptr;
  std::string graph_error;  // why no graph was captured, when capture was attempted and failed

  ~Instance() {
    if (exec) cudaGraphExecDestroy(exec);
    if (pinned) cudaFreeHost(pinned);
  }
};

CudaContext::CudaContext(const CudaExecutor& ex) : ex_(ex) {}

CudaContext::~CudaContext() {
  if (profiling_) print_profile();
  for (cudaEvent_t& e : step_events_)
    if (e) cudaEventDestroy(e);
  instances_.clear();
  for (cudaEvent_t& e : events_)
    if (e) cudaEventDestroy(e);
  for (cudaEvent_t& e : graph_events_)
    if (e) cudaEventDestroy(e);
  if (handles_.cudnn) cudnnDestroy(handles_.cudnn);
  if (handles_.lt) cublasLtDestroy(handles_.lt);
  if (handles_.stream) cudaStreamDestroy(handles_.stream);
}

Expected<std::unique_ptr<CudaContext>> CudaContext::create(const CudaExecutor& ex) {
  std::unique_ptr<CudaContext> c(new CudaContext(ex));
  INGOT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&c->handles_.stream, cudaStreamNonBlocking));
  INGOT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&c->handles_.lt));
  INGOT_CUDNN_RETURN_IF_ERROR(cudnnCreate(&c->handles_.cudnn));
  INGOT_CUDNN_RETURN_IF_ERROR(cudnnSetStream(c->handles_.cudnn, c->handles_.stream));
  c->handles_.sm_count = ex.sm_count();
  c->handles_.max_smem_per_block = ex.max_smem_per_block();
  c->handles_.cc_major = ex.cc_major();
  c->handles_.cc_minor = ex.cc_minor();
  c->handles_.allow_tf32 = ex.options().allow_tf32;
  auto counter = DeviceBuffer::allocate(kGridCounterWords * sizeof(unsigned));
  if (!counter) return counter.status().with_context("grid counters: ");
  c->grid_counter_ = std::move(*counter);
  INGOT_CUDA_RETURN_IF_ERROR(cudaMemset(c->grid_counter_.get(), 0, kGridCounterWords * sizeof(unsigned)));
  c->handles_.grid_counter = static_cast<unsigned*>(c->grid_counter_.get());
  const size_t scratch_bytes = size_t(std::max(ex.sm_count(), 1)) * kGridScratchBytesPerSm;
  auto scratch = DeviceBuffer::allocate(scratch_bytes);
  if (!scratch) return scratch.status().with_context("grid scratch: ");
  c->grid_scratch_ = std::move(*scratch);
  c->handles_.grid_scratch = c->grid_scratch_.get(), c->handles_.grid_scratch_bytes = scratch_bytes;
  auto gemm_ws = DeviceBuffer::allocate(kGemmWorkspaceBytes);
  if (!gemm_ws) return gemm_ws.status().with_context("cuBLASLt workspace: ");
  c->gemm_workspace_ = std::move(*gemm_ws);
  c->handles_.gemm_workspace = c->gemm_workspace_.get();
  c->handles_.gemm_workspace_bytes = c->gemm_workspace_.bytes();
  for (cudaEvent_t& e : c->events_) INGOT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  for (cudaEvent_t& e : c->graph_events_) INGOT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  const char* prof = std::getenv("INGOT_CUDA_PROFILE");
  c->profiling_ = prof && *prof && std::string(prof) != "0";
  // INGOT_CUDA_SKIP_OPS=LayerNormalization,Attention.core,...: what a run costs without those
  // kernels, inside the CUDA graph (where Nsight Compute, which serialises kernels, cannot see).
  // The outputs are wrong, so every context says so.
  if (const char* skip = std::getenv("INGOT_CUDA_SKIP_OPS"); skip && *skip) {
    c->handles_.skip_ops = op_types_in(skip);
    std::fprintf(stderr, "ingot: warning: INGOT_CUDA_SKIP_OPS=%s: those kernels are skipped and the outputs are wrong "
                 "(a timing aid)\n", skip);
  }
  // INGOT_CUDA_REPEAT_OPS=Attention,...: those op types' steps enqueue their kernels twice. Where
  // the GPU sits at its power limit, skipping a kernel also changes the data every later kernel
  // multiplies, and with it the board's power (developer session 40: BERT-base b32 without its
  // embedding drew 683 mJ a run instead of 977); a second launch of a kernel that does not
  // write over its inputs leaves every value as it was, so the difference is that kernel's cost.
  if (const char* repeat = std::getenv("INGOT_CUDA_REPEAT_OPS"); repeat && *repeat) {
    c->repeat_ops_ = op_types_in(repeat);
    std::fprintf(stderr, "ingot: warning: INGOT_CUDA_REPEAT_OPS=%s: those kernels run twice (a timing aid; an op that "
                 "writes over its inputs then gives wrong outputs)\n", repeat);
  }
  if (const MemoryPlan* p = ex.memory_plan()) INGOT_RETURN_IF_ERROR(c->reserve(p->arena_bytes, 0));
  return c;
}

// Grows the arena or workspace; captured graphs and bound pointers of every instance are then
// stale, so instances are dropped and rebuilt on their next run.
Status CudaContext::reserve(int64_t arena, size_t workspace) {
  bool grow = false;
  if (arena > int64_t(arena_.bytes())) {
    arena_ = DeviceBuffer();
    auto b = DeviceBuffer::allocate(size_t(arena));
    if (!b) return b.status().with_context("activation arena: ");
    arena_ = std::move(*b);
    grow = true;
  }
  if (workspace > workspace_.bytes()) {
    workspace_ = DeviceBuffer();
    auto b = DeviceBuffer::allocate(workspace);
    if (!b) return b.status().with_context("workspace: ");
    workspace_ = std::move(*b);
    grow = true;
  }
  if (grow) {
    INGOT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(handles_.stream));
    instances_.clear();
  }
  return Status::ok();
}

Expected<CudaContext::Instance*> CudaContext::instance(const std::shared_ptr<const ShapePlan>& plan) {
  auto it = instances_.find(plan->key);
  if (it != instances_.end() && it->second->plan == plan) return it->second.get();
  INGOT_RETURN_IF_ERROR(reserve(plan->memory.arena_bytes, plan->workspace_bytes));
  auto inst = std::make_unique<Instance>();
  inst->plan = plan;
  const Graph& g = ex_.graph();
  const auto& H = plan->homes;
  const auto& M = plan->metas;
  std::vector<void*> ptr(H.size(), nullptr);
  for (size_t v = 0; v < H.size(); ++v) {
    switch (H[v].kind) {
      case ValueHome::Kind::kWeight: ptr[v] = ex_.weights() + H[v].offset; break;
      case ValueHome::Kind::kConstant: ptr[v] = at(plan->constants.get(), H[v].offset); break;
      case ValueHome::Kind::kArena: ptr[v] = at(arena_.get(), H[v].offset); break;
      case ValueHome::Kind::kOwn: {
        auto b = DeviceBuffer::allocate(size_t(std::max<int64_t>(H[v].bytes, 1)));
        if (!b) return b.status().with_context("'" + g.value(ValueId(v)).name + "': ");
        ptr[v] = b->get();
        inst->own.push_back(std::move(*b));
        break;
      }
      default: break;
    }
  }
  for (size_t v = 0; v < H.size(); ++v)
    if (H[v].kind == ValueHome::Kind::kView) ptr[v] = ptr[size_t(H[v].root)];
  inst->dev.resize(H.size());
  for (size_t v = 0; v < H.size(); ++v)
    if (ptr[v] && M[v].known) inst->dev[v] = Tensor::wrap(M[v].dtype, M[v].shape, ptr[v], nullptr);

  for (const ShapePlan::Step& s : plan->steps) {
    const Node& n = g.nodes[size_t(s.node)];
    Instance::Bound b;
    for (ValueId v : n.inputs) {
      const Tensor* host = nullptr;
      if (v != kNoValue) {
        auto w = g.initializers.find(v);
        host = w != g.initializers.end() ? &w->second : M[size_t(v)].value.get();
      }
      b.in.push_back(v != kNoValue && inst->dev[size_t(v)].defined() ? &inst->dev[size_t(v)] : nullptr);
      b.host.push_back(host);
    }
    for (ValueId v : n.outputs) b.out.push_back(v != kNoValue ? &inst->dev[size_t(v)] : nullptr);
    for (const ByteRange& r : s.prefetch) {
      b.prefetch.ptr[b.prefetch.count] = ex_.weights() + r.offset;
      b.prefetch.bytes[b.prefetch.count++] = uint32_t(r.bytes);
    }
    for (const ByteRange& r : s.prefetch_after) {
      b.prefetch_after.ptr[b.prefetch_after.count] = ex_.weights() + r.offset;
      b.prefetch_after.bytes[b.prefetch_after.count++] = uint32_t(r.bytes);
    }
    inst->bound.push_back(std::move(b));
  }

  int64_t pinned = 0;
  for (ValueId v : g.inputs) {
    inst->pinned_in.push_back(pinned);
    pinned += (H[size_t(v)].bytes + 255) / 256 * 256;
  }
  for (ValueId v : g.outputs) {
    inst->pinned_out.push_back(pinned);
    if (M[size_t(v)].known) pinned += (shape_numel(M[size_t(v)].shape) * int64_t(dtype_size(M[size_t(v)].dtype)) + 255) / 256 * 256;
  }
  INGOT_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&inst->pinned, size_t(std::max<int64_t>(pinned, 1)), cudaHostAllocDefault));
  inst->host_out.resize(g.outputs.size());
  Instance* raw = inst.get();
  instances_[plan->key] = std::move(inst);
  return raw;
}

// Enqueues every step. CPU steps synchronise, copy their device inputs down, run the CPU
// kernel and copy the outputs up (capture never sees them: such plans are not captured).
Status CudaContext::enqueue(Instance& inst, const std::vector<char>* step_pdl) {
  const Graph& g = ex_.graph();
  const ShapePlan& plan = *inst.plan;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const ShapePlan::Step& s = plan.steps[i];
    const Node& n = g.nodes[size_t(s.node)];
    Instance::Bound& b = inst.bound[i];
    if (s.view) continue;
    if (s.on_device && handles_.skips(n.op_type)) continue;
    if (profiling_) INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_events_[2 * i], handles_.stream));
    if (s.on_device) {
      CudaComputeContext ctx(n, b.in, b.host, b.out, handles_, workspace_.get(), workspace_.bytes(), b.prefetch,
                             b.prefetch_after);
      std::optional<DependentLaunchScope> step_scope;
      if (step_pdl) step_scope.emplace((*step_pdl)[i] != 0);
      for (int r = repeat_ops_.count(n.op_type) ? 2 : 1; r > 0; --r)
        INGOT_RETURN_IF_ERROR(ex_.kernels(s.node).cuda->compute(ctx).with_context(describe_node(n, s.node) + ": "));
      if (profiling_) INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_events_[2 * i + 1], handles_.stream));
      continue;
    }
    INGOT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(handles_.stream));
    std::vector<Tensor> host_in(n.inputs.size());
    std::vector<const Tensor*> ins;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ValueId v = n.inputs[k];
      if (v == kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      if (b.host[k]) {
        ins.push_back(b.host[k]);
        continue;
      }
      const Tensor& d = inst.dev[size_t(v)];
      if (!d.defined()) return internal_error(describe_node(n, s.node) + ": input '" + g.value(v).name + "' has no device buffer");
      host_in[k] = Tensor(d.dtype(), d.shape());
      INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy(host_in[k].raw(), d.raw(), d.nbytes(), cudaMemcpyDeviceToHost));
      ins.push_back(&host_in[k]);
    }
    std::vector<OutputMeta> metas;
    for (ValueId v : n.outputs) {
      if (v == kNoValue) metas.push_back({});
      else metas.push_back(OutputMeta{plan.metas[size_t(v)].dtype, plan.metas[size_t(v)].shape, false, true});
    }
    ComputeContext cc(n, ins, metas, nullptr);
    auto cpu = ex_.kernels(s.node).cpu.get();
    if (!cpu) return internal_error(describe_node(n, s.node) + ": no CPU kernel for a CPU step");
    INGOT_RETURN_IF_ERROR(cpu->compute(cc).with_context(describe_node(n, s.node) + ": "));
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      ValueId v = n.outputs[o];
      if (v == kNoValue) continue;
      Tensor& out = cc.output(int(o));
      const Tensor& d = inst.dev[size_t(v)];
      if (out.shape() != d.shape() || out.dtype() != d.dtype()) {
        return internal_error(describe_node(n, s.node) + ": CPU output " + std::to_string(o) + " is " +
                              shape_str(out.shape()) + ", planned " + shape_str(d.shape()));
      }
      INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpy(const_cast<void*>(d.raw()), out.raw(), out.nbytes(), cudaMemcpyHostToDevice));
    }
    if (profiling_) INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_events_[2 * i + 1], handles_.stream));
  }
  return Status::ok();
}

void CudaContext::print_profile() const {
  if (profile_.empty()) return;
  std::vector<std::pair<std::string, OpTime>> rows(profile_.begin(), profile_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double total = 0;
  for (const auto& r : rows) total += r.second.ms;
  std::fprintf(stderr, "ingot: CUDA profile over %lld run(s), kernels one by one (no CUDA graph):\n",
               static_cast<long long>(profiled_runs_));
  std::fprintf(stderr, "  %-28s %9s %12s %12s %7s\n", "op", "launches", "ms per run", "us each", "share");
  for (const auto& [op, t] : rows) {
    double runs = double(std::max<int64_t>(profiled_runs_, 1));
    std::fprintf(stderr, "  %-28s %9.1f %12.4f %12.2f %6.1f%%\n", op.c_str(), double(t.launches) / runs, t.ms / runs,
                 1000.0 * t.ms / double(std::max<int64_t>(t.launches, 1)), 100.0 * t.ms / total);
  }
  std::fprintf(stderr, "  %-28s %9s %12.4f\n", "total", "", total / double(std::max<int64_t>(profiled_runs_, 1)));
}

// The largest activation of the instance's plan (arena values, inputs and outputs), in bytes.
int64_t CudaContext::largest_activation(const Instance& inst) {
  int64_t largest = 0;
  for (const ValueHome& h : inst.plan->homes)
    if (h.kind == ValueHome::Kind::kArena || h.kind == ValueHome::Kind::kOwn) largest = std::max(largest, h.bytes);
  return largest;
}

// Captures the instance's kernels into a CUDA graph after its first (eager) run, so library
// initialisation that is not capturable (module loads, heuristics) happened outside it; then the
// products' algorithms are tuned in that graph (lt_gemm.h).
void CudaContext::capture(Instance& inst) {
  // One capture at a time in the process: a product's algorithm is decided by the first graph
  // that runs it (tuned there, or kept as the trials ranked it), and no graph captures a choice
  // another context is only trying, so every context's graph computes the same bits.
  static std::mutex deciding;
  const std::lock_guard<std::mutex> lock(deciding);
  std::vector<GemmPlan*> products;
  {
    const GemmTuneRecorder recorder;
    inst.exec = capture_graph(inst, inst.graph_error);
    products = recorder.plans();
  }
  // Only where kernels are latency-bound (the graphs small enough for dependent launch): there
  // a product's neighbours decide its time. At batch 32 the products are bound by their
  // arithmetic, the cold trials rank them as the graph does, and tuning only timed noise
  // (H100, developer session 24, alternating A/B, tuned / not: DistilBERT b32 0.7108 / 0.6957,
  // 0.7140 / 0.7038, 0.7132 / 0.7023; BERT-base b32 1.5122 / 1.4810, 1.4939 / 1.4798,
  // 1.5015 / 1.4895, its replays heating the GPU besides).
  if (inst.exec && graph_tuning_enabled() && dependent_launch_pays(largest_activation(inst))) tune_products(inst, products);
  for (GemmPlan* p : products) finish_gemm_choice(p);
}

// Mean GPU time of one replay of `exec` over kTuneReplays back to back; < 0 on failure.
double CudaContext::replay_ms(cudaGraphExec_t exec) {
  cudaStream_t st = handles_.stream;
  if (cudaEventRecord(events_[0], st) != cudaSuccess) return -1;
  for (int i = 0; i < kTuneReplays; ++i)
    if (cudaGraphLaunch(exec, st) != cudaSuccess) return -1;
  float ms = 0;
  if (cudaEventRecord(events_[1], st) != cudaSuccess || cudaEventSynchronize(events_[1]) != cudaSuccess ||
      cudaEventElapsedTime(&ms, events_[0], events_[1]) != cudaSuccess)
    return -1;
  return double(ms) / kTuneReplays;
}

// Each recorded product with ranked alternatives: the graph recaptured with each, timed in
// alternation with the graph in use (the fastest of kTuneRounds rounds each, after a warm-up
// replay), and kept when it is faster by more than kTuneMargin. Any failure leaves the graph in
// use as it is.
void CudaContext::tune_products(Instance& inst, const std::vector<GemmPlan*>& products) {
  const bool log = std::getenv("INGOT_CUDA_GRAPH_TUNE_LOG") != nullptr;
  for (GemmPlan* p : products) {
    const int n = gemm_choices(p);
    if (n < 2) continue;
    const int first = gemm_choice(p);
    int best = first;
    for (int i = 0; i < n; ++i) {
      if (i == first) continue;
      set_gemm_choice(p, i);
      std::string error;
      cudaGraphExec_t alt = capture_graph(inst, error);
      if (!alt) continue;
      double t_best = 1e30, t_alt = 1e30;
      bool ok = replay_ms(inst.exec) >= 0 && replay_ms(alt) >= 0;  // warm-up
      for (int r = 0; ok && r < kTuneRounds; ++r) {
        const double b = replay_ms(inst.exec), a = replay_ms(alt);
        ok = b >= 0 && a >= 0;
        t_best = std::min(t_best, b), t_alt = std::min(t_alt, a);
      }
      if (log)
        std::fprintf(stderr, "ingot: graph tuning %s: candidate %d %.4f ms against %d %.4f ms\n", gemm_plan_name(p).c_str(),
                     i, t_alt, best, t_best);
      if (ok && t_alt < t_best * (1.0 - kTuneMargin)) {
        cudaGraphExecDestroy(inst.exec);
        inst.exec = alt;
        best = i;
      } else {
        cudaGraphExecDestroy(alt);
      }
    }
    set_gemm_choice(p, best);
  }
  cudaGetLastError();
}

// The instance's kernels as an instantiated CUDA graph, or null with `error` set.
cudaGraphExec_t CudaContext::capture_graph(Instance& inst, std::string& error) {
  // INGOT_CUDA_PDL=auto: dependent launch for this graph when its activations are small.
  const bool small = dependent_launch_mode() == DependentLaunchMode::kAuto && dependent_launch_pays(largest_activation(inst));
  const DependentLaunchScope scope(small);
  // A graph too large for dependent launch still takes it for its steps of small outputs.
  std::vector<char> step_pdl;
  if (!small && dependent_launch_mode() == DependentLaunchMode::kAuto) {
    const Graph& g = ex_.graph();
    step_pdl.assign(inst.plan->steps.size(), 0);
    for (size_t i = 0; i < inst.plan->steps.size(); ++i) {
      int64_t largest = 0;
      for (ValueId v : g.nodes[size_t(inst.plan->steps[i].node)].outputs)
        if (v != kNoValue) largest = std::max(largest, inst.plan->homes[size_t(v)].bytes);
      step_pdl[i] = step_dependent_launch_pays(largest);
    }
  }
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamBeginCapture(handles_.stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    error = std::string("begin capture: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return nullptr;
  }
  const GemmCaptureLog products;
  // The graph's first and last nodes record graph_events_ (cuda_context.h).
  Status st = Status::ok();
  if ((e = cudaEventRecordWithFlags(graph_events_[0], handles_.stream, cudaEventRecordExternal)) != cudaSuccess)
    st = internal_error(std::string("event node: ") + cudaGetErrorString(e));
  if (st.is_ok()) st = enqueue(inst, step_pdl.empty() ? nullptr : &step_pdl);
  if (st.is_ok() && (e = cudaEventRecordWithFlags(graph_events_[1], handles_.stream, cudaEventRecordExternal)) != cudaSuccess)
    st = internal_error(std::string("event node: ") + cudaGetErrorString(e));
  e = cudaStreamEndCapture(handles_.stream, &graph);
  if (!st.is_ok() || e != cudaSuccess || !graph) {
    error = !st.is_ok() ? st.message() : std::string("end capture: ") + cudaGetErrorString(e);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return nullptr;
  }
  if (gemm_clears_released() &&
      release_gemm_clears(graph, products.spans(), handles_.gemm_workspace, handles_.gemm_workspace_bytes) < 0) {
    error = "cuBLASLt's workspace clears could not be moved";
    cudaGraphDestroy(graph);
    return nullptr;
  }
  if (memset_nodes_replaced() && replace_memset_nodes(graph) < 0) {
    error = "memset nodes could not be replaced by kernels";
    cudaGraphDestroy(graph);
    return nullptr;
  }
  if ((dependent_launch_enabled() || !step_pdl.empty()) && trigger_dependents_at_launch(graph) < 0) {
    error = "programmatic edges could not be moved to launch completion";
    cudaGraphDestroy(graph);
    return nullptr;
  }
  cudaGraphExec_t exec = nullptr;
  e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    error = std::string("instantiate: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return nullptr;
  }
  return exec;
}

Expected<std::vector<Tensor>> CudaContext::run(const std::vector<Tensor>& inputs) {
  const Graph& g = ex_.graph();
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(t.shape());
  }
  auto plan = ex_.plan_for(dtypes, shapes);
  if (!plan) return plan.status();
  auto ip = instance(*plan);
  if (!ip) return ip.status();
  Instance& inst = **ip;
  const ShapePlan& p = **plan;
  cudaStream_t st = handles_.stream;

  // Profiling enqueues kernel by kernel; a hold of the stream while the host enqueues the run
  // keeps host enqueue time (cuDNN's is tens of microseconds a call) out of the per-op events.
  const auto enqueue_start = std::chrono::steady_clock::now();
  if (profiling_) {
    const int hold_us = int(std::clamp(2000.0 * profile_enqueue_ms_, 1000.0, 200000.0));
    INGOT_CUDA_RETURN_IF_ERROR(launch_stream_hold(st, hold_us));
  }
  auto send_inputs = [&]() -> Status {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      void* dst = const_cast<void*>(inst.dev[size_t(g.inputs[i])].raw());
      INGOT_RETURN_IF_ERROR(send_input(at(inst.pinned, inst.pinned_in[i]), static_cast<const std::byte*>(t.raw()), dst,
                                       t.nbytes(), st));
    }
    return Status::ok();
  };
  // A shape's first run: its kernels once without a graph (what cannot be captured, module loads
  // and the products' trials, happens there), then the graph is captured and tuned, and this run's
  // outputs come from it as every later run's do: the same bits from the first run on.
  if (inst.runs == 0 && p.device_only && ex_.options().cuda_graph && !inst.exec && inst.graph_error.empty() &&
      !profiling_) {
    INGOT_RETURN_IF_ERROR(send_inputs());
    INGOT_RETURN_IF_ERROR(enqueue(inst));
    INGOT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
    capture(inst);
  }
  INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[0], st));
  INGOT_RETURN_IF_ERROR(send_inputs());
  INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[1], st));
  if (profiling_ && step_events_.size() < 2 * p.steps.size()) {
    size_t have = step_events_.size();
    step_events_.resize(2 * p.steps.size(), nullptr);
    for (size_t k = have; k < step_events_.size(); ++k) INGOT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_events_[k]));
  }
  if (inst.exec) {
    INGOT_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(inst.exec, st));
  } else {
    INGOT_RETURN_IF_ERROR(enqueue(inst));
  }
  INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[2], st));
  std::vector<Tensor> outs(g.outputs.size());
  std::vector<char> direct(g.outputs.size(), 0);  // copied straight into the cached pinned block
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    ValueId v = g.outputs[i];
    const ValueMeta& m = p.metas[size_t(v)];
    auto w = g.initializers.find(v);
    if (w != g.initializers.end()) {
      outs[i] = w->second.clone();
    } else if (p.homes[size_t(v)].kind == ValueHome::Kind::kHost && m.value) {
      outs[i] = m.value->clone();
    } else {
      const Tensor& d = inst.dev[size_t(v)];
      if (!d.defined()) return internal_error("output '" + g.value(v).name + "' has no device buffer");
      if (d.nbytes()) {
        const HostBlock& block = inst.host_out[i].pinned;
        direct[i] = reusable(block, d.nbytes());
        INGOT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(direct[i] ? block.memory.get() : at(inst.pinned, inst.pinned_out[i]),
                                                   d.raw(), d.nbytes(), cudaMemcpyDeviceToHost, st));
      }
    }
  }
  INGOT_CUDA_RETURN_IF_ERROR(cudaEventRecord(events_[3], st));
  if (profiling_)
    profile_enqueue_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - enqueue_start).count();
  INGOT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (outs[i].defined()) continue;
    const Tensor& d = inst.dev[size_t(g.outputs[i])];
    std::shared_ptr<void> block =
        direct[i] ? inst.host_out[i].pinned.memory : host_block_for(inst.host_out[i], d.nbytes());
    if (!block)
      return internal_error("out of host memory for output '" + g.value(g.outputs[i]).name + "' (" +
                            std::to_string(d.nbytes()) + " bytes)");
    if (!direct[i]) std::memcpy(block.get(), at(inst.pinned, inst.pinned_out[i]), d.nbytes());
    outs[i] = Tensor::wrap(d.dtype(), d.shape(), block.get(), block);
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, events_[0], events_[1]);
  times_.h2d_ms = ms;
  if (inst.exec)
    cudaEventElapsedTime(&ms, graph_events_[0], graph_events_[1]);
  else
    cudaEventElapsedTime(&ms, events_[1], events_[2]);
  times_.compute_ms = ms;
  cudaEventElapsedTime(&ms, events_[2], events_[3]);
  times_.d2h_ms = ms;

  if (profiling_ && inst.runs > 0) {  // the first run of a shape pays one-time costs: not counted
    for (size_t i = 0; i < p.steps.size(); ++i) {
      if (p.steps[i].view) continue;
      float step_ms = 0;
      if (cudaEventElapsedTime(&step_ms, step_events_[2 * i], step_events_[2 * i + 1]) != cudaSuccess) continue;
      const Node& n = g.nodes[size_t(p.steps[i].node)];
      OpTime& t = profile_[(n.domain.empty() ? "" : n.domain + ".") + n.op_type + (p.steps[i].on_device ? "" : " (cpu)")];
      t.ms += step_ms;
      ++t.launches;
    }
    ++profiled_runs_;
  }
  ++inst.runs;
  return outs;
}

DeviceMemoryReport CudaContext::memory() const {
  DeviceMemoryReport r;
  r.arena = int64_t(arena_.bytes());
  r.workspace = int64_t(workspace_.bytes() + gemm_workspace_.bytes());
  for (const auto& [k, inst] : instances_)
    for (const DeviceBuffer& b : inst->own) r.io += int64_t(b.bytes());
  return r;
}

}  // namespace ingot::cuda
