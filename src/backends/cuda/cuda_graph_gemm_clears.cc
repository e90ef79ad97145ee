// release_gemm_clears and the capture log it reads (cuda_graph_gemm_clears.h).
#include "backends/cuda/cuda_graph_gemm_clears.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ingot::cuda {
namespace {

thread_local GemmCaptureLog* active_log = nullptr;

// The capture's current dependencies; false when `stream` is not capturing.
bool capture_dependencies(cudaStream_t stream, std::vector<cudaGraphNode_t>& out) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, nullptr, &n) != cudaSuccess ||
      status != cudaStreamCaptureStatusActive) {
    cudaGetLastError();
    return false;
  }
  out.assign(deps, deps + n);
  return true;
}

struct Edges {
  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> data;
};

bool dependencies_of(cudaGraphNode_t node, Edges& e) {
  size_t n = 0;
  if (cudaGraphNodeGetDependencies(node, nullptr, nullptr, &n) != cudaSuccess) return false;
  e.nodes.resize(n), e.data.resize(n);
  return n == 0 || cudaGraphNodeGetDependencies(node, e.nodes.data(), e.data.data(), &n) == cudaSuccess;
}

bool dependents_of(cudaGraphNode_t node, Edges& e) {
  size_t n = 0;
  if (cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &n) != cudaSuccess) return false;
  e.nodes.resize(n), e.data.resize(n);
  return n == 0 || cudaGraphNodeGetDependentNodes(node, e.nodes.data(), e.data.data(), &n) == cudaSuccess;
}

bool contains(const std::vector<cudaGraphNode_t>& v, cudaGraphNode_t n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

// The span's nodes from first to last, following single dependencies back from `last` until a
// node depends on exactly `before`; empty when the span is not such a chain.
std::vector<cudaGraphNode_t> chain_of(const GemmCaptureSpan& s) {
  std::vector<cudaGraphNode_t> chain;
  cudaGraphNode_t cur = s.last;
  for (int guard = 0; cur && guard < 64; ++guard) {
    if (contains(s.before, cur)) return {};  // the product added no node
    chain.push_back(cur);
    Edges d;
    if (!dependencies_of(cur, d)) return {};
    const bool at_start = d.nodes.size() == s.before.size() &&
                          std::all_of(d.nodes.begin(), d.nodes.end(), [&](cudaGraphNode_t n) { return contains(s.before, n); });
    if (at_start) {
      std::reverse(chain.begin(), chain.end());
      return chain;
    }
    if (d.nodes.size() != 1) return {};
    cur = d.nodes[0];
  }
  return {};
}

bool clears_workspace(cudaGraphNode_t node, const void* workspace, size_t bytes) {
  cudaGraphNodeType type{};
  if (cudaGraphNodeGetType(node, &type) != cudaSuccess || type != cudaGraphNodeTypeMemset) return false;
  cudaMemsetParams m{};
  if (cudaGraphMemsetNodeGetParams(node, &m) != cudaSuccess) return false;
  const auto lo = reinterpret_cast<uintptr_t>(workspace), p = reinterpret_cast<uintptr_t>(m.dst);
  const unsigned long long span = (m.height > 1 ? m.pitch * (m.height - 1) : 0) + m.width * m.elementSize;
  return p >= lo && p - lo <= bytes && span <= bytes - (p - lo);
}

// Moves memset `clear` (first on its span's chain) from after `before` to after `prev` (none:
// a root); its dependents then depend on `before` too. False on a failure after the first edit
// (`broken`) or before it.
bool move_clear(cudaGraph_t graph, cudaGraphNode_t clear, const std::vector<cudaGraphNode_t>& before,
                cudaGraphNode_t prev, bool& broken) {
  Edges deps, next;
  if (!dependencies_of(clear, deps) || !dependents_of(clear, next) || next.nodes.empty()) return false;
  for (cudaGraphNode_t n : next.nodes) {
    Edges nd;
    if (!dependencies_of(n, nd)) return false;
    for (cudaGraphNode_t b : before)
      if (contains(nd.nodes, b)) return false;  // not the chain capture makes
  }
  for (size_t i = 0; i < deps.nodes.size(); ++i) {
    if (!contains(before, deps.nodes[i])) continue;
    if (cudaGraphRemoveDependencies(graph, &deps.nodes[i], &clear, &deps.data[i], 1) != cudaSuccess) {
      broken = true;
      return false;
    }
    for (cudaGraphNode_t n : next.nodes)
      if (cudaGraphAddDependencies(graph, &deps.nodes[i], &n, nullptr, 1) != cudaSuccess) {
        broken = true;
        return false;
      }
  }
  if (prev && cudaGraphAddDependencies(graph, &prev, &clear, nullptr, 1) != cudaSuccess) {
    broken = true;
    return false;
  }
  return true;
}

// What the first product's clear waits for: the node before the node before the product (the
// clears after it wait for the product before, further back), so that it runs beside the
// kernel before the product as the others do. A root instead, ready when the graph starts,
// started 60-190 us late in every traced replay of BERT-base b32 (H200, Nsight Systems,
// developer session 39) and the first FFN 1 waited for it; untraced, `ingot bench` gained
// ~0.4 %. None (a root) where there is no such node, or with INGOT_CUDA_GEMM_CLEARS=root (an
// A/B switch).
cudaGraphNode_t first_clear_after(const GemmCaptureSpan& s) {
  const char* e = std::getenv("INGOT_CUDA_GEMM_CLEARS");
  if ((e && std::strcmp(e, "root") == 0) || s.before.size() != 1) return nullptr;
  Edges d;
  return dependencies_of(s.before[0], d) && d.nodes.size() == 1 ? d.nodes[0] : nullptr;
}

}  // namespace

GemmCaptureLog::GemmCaptureLog() : saved_(active_log) { active_log = this; }
GemmCaptureLog::~GemmCaptureLog() { active_log = saved_; }

void record_gemm_capture_begin(cudaStream_t stream) {
  GemmCaptureLog* log = active_log;
  if (!log) return;
  GemmCaptureSpan s;
  log->open_ = capture_dependencies(stream, s.before);
  if (log->open_) log->spans_.push_back(std::move(s));
}

void record_gemm_capture_end(cudaStream_t stream) {
  GemmCaptureLog* log = active_log;
  if (!log || !log->open_) return;
  log->open_ = false;
  std::vector<cudaGraphNode_t> after;
  // One node after a product on a single-stream capture; anything else is left where it is.
  if (!capture_dependencies(stream, after) || after.size() != 1) {
    log->spans_.pop_back();
    return;
  }
  log->spans_.back().last = after[0];
}

int release_gemm_clears(cudaGraph_t graph, const std::vector<GemmCaptureSpan>& spans, const void* workspace,
                        size_t bytes) {
  if (!workspace || bytes == 0 || spans.empty()) return 0;
  int moved = 0;
  bool broken = false;
  cudaGraphNode_t prev = first_clear_after(spans.front());
  for (const GemmCaptureSpan& s : spans) {
    const std::vector<cudaGraphNode_t> chain = chain_of(s);
    // The leading clears, each moved in turn; the last node (the product) stays.
    for (size_t i = 0; i + 1 < chain.size() && clears_workspace(chain[i], workspace, bytes); ++i) {
      if (!move_clear(graph, chain[i], s.before, prev, broken)) break;
      ++moved;
    }
    if (broken) break;
    prev = s.last;
  }
  cudaGetLastError();
  return broken ? -1 : moved;
}

bool gemm_clears_released() {
  const char* e = std::getenv("INGOT_CUDA_GEMM_CLEARS");
  return !(e && std::strcmp(e, "chain") == 0);
}

}  // namespace ingot::cuda
