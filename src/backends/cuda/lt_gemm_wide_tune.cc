// Wide tuning of large products (see lt_gemm_wide_tune.h).
#include "backends/cuda/lt_gemm_wide_tune.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "backends/cuda/cuda_stream_hold.h"
#include "backends/cuda/lt_algo_attributes.h"

namespace ingot::cuda {
namespace {

// Launches screened between one synchronisation and the next (an event between each two).
constexpr size_t kScreenGroup = 256;
// The hold in front of a group: long enough for the host to enqueue it (cuBLASLt's host work is
// a few µs a launch), so that no interval times the host.
constexpr int kHoldMicrosecondsPerLaunch = 8;
// Configurations timed again, and launches each, after the screen.
constexpr size_t kRefined = 16;
constexpr int kRefineRuns = 20;
// Tiles whose every cluster shape and custom option are screened in the second stage.
constexpr size_t kTileFinalists = 8;

template <class T>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T v) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS;
}

// Events around back-to-back launches: interval i is launch i's GPU time.
class EventChain {
 public:
  explicit EventChain(size_t n) : events_(n, nullptr) {
    for (cudaEvent_t& e : events_) ok_ = ok_ && cudaEventCreate(&e) == cudaSuccess;
  }
  ~EventChain() {
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
  }
  EventChain(const EventChain&) = delete;
  EventChain& operator=(const EventChain&) = delete;
  bool ok() const { return ok_; }
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
  bool ok_ = true;
};

// GPU time (ms) of `runs` launches of each of configs[first, first + count), one interval per
// configuration, behind one hold; a configuration whose launch failed gets a negative time.
// False when the stream or the events fail.
bool time_group(cudaStream_t stream, const EventChain& events, const std::vector<cublasLtMatmulAlgo_t>& configs,
                size_t first, size_t count, int runs, const std::function<bool(const cublasLtMatmulAlgo_t&)>& launch,
                std::vector<float>& ms) {
  if (launch_stream_hold(stream, int(count) * runs * kHoldMicrosecondsPerLaunch) != cudaSuccess) return false;
  std::vector<bool> launched(count, true);
  if (cudaEventRecord(events[0], stream) != cudaSuccess) return false;
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < runs && launched[i]; ++r) launched[i] = launch(configs[first + i]);
    if (cudaEventRecord(events[i + 1], stream) != cudaSuccess) return false;
  }
  if (cudaEventSynchronize(events[count]) != cudaSuccess) return false;
  ms.assign(count, -1.f);
  for (size_t i = 0; i < count; ++i) {
    float t = 0;
    if (cudaEventElapsedTime(&t, events[i], events[i + 1]) != cudaSuccess) return false;
    if (launched[i]) ms[i] = t / float(runs);
  }
  return true;
}

uint32_t custom_options(const cublasLtMatmulAlgo_t& algo) {
  return std::min<uint32_t>(cap_value<uint32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), 7) + 1;
}

// `base` with this tile, cluster shape and custom option, when cuBLASLt accepts it for p.
bool variant(const LtProduct& p, const cublasLtMatmulAlgo_t& base, uint32_t tile, uint16_t cluster, uint32_t custom,
             cublasLtMatmulAlgo_t& out) {
  out = base;
  if (!set_config(out, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
      !set_config(out, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster) ||
      !set_config(out, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom))
    return false;
  cublasLtMatmulHeuristicResult_t checked{};
  return cublasLtMatmulAlgoCheck(p.lt, p.op, p.a, p.b, p.c, p.d, &out, &checked) == CUBLAS_STATUS_SUCCESS &&
         checked.workspaceSize <= p.workspace;
}

// Appends the configurations of `more` that `list` does not hold yet.
void append_new(std::vector<cublasLtMatmulAlgo_t>& list, const std::vector<cublasLtMatmulAlgo_t>& more) {
  for (const cublasLtMatmulAlgo_t& m : more)
    if (std::none_of(list.begin(), list.end(),
                     [&](const cublasLtMatmulAlgo_t& x) { return std::memcmp(x.data, m.data, sizeof(m.data)) == 0; }))
      list.push_back(m);
}

}  // namespace

std::vector<cublasLtMatmulAlgo_t> tile_variants(const LtProduct& p, const std::vector<cublasLtMatmulAlgo_t>& heuristic) {
  std::vector<cublasLtMatmulAlgo_t> out;
  std::set<int32_t> seen;
  for (const cublasLtMatmulAlgo_t& base : heuristic) {
    if (!seen.insert(config_value<int32_t>(base, CUBLASLT_ALGO_CONFIG_ID)).second) continue;
    std::vector<uint32_t> tiles = cap_array<uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
    const uint16_t base_cluster = config_value<uint16_t>(base, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
    const uint32_t customs = custom_options(base);
    for (uint32_t tile : tiles) {
      // The candidate's cluster shape with every custom option (QKV's fastest tile was out of
      // reach with the candidate's option alone); else the first cluster shape and option taken.
      cublasLtMatmulAlgo_t algo;
      bool found = false;
      for (uint32_t custom = 0; custom < customs; ++custom)
        if (variant(p, base, tile, base_cluster, custom, algo)) out.push_back(algo), found = true;
      for (uint16_t cluster : kClusterShapes)
        for (uint32_t custom = 0; custom < customs && !found; ++custom)
          if (variant(p, base, tile, cluster, custom, algo)) out.push_back(algo), found = true;
    }
  }
  return out;
}

std::vector<cublasLtMatmulAlgo_t> cluster_variants(const LtProduct& p, const cublasLtMatmulAlgo_t& base) {
  const uint32_t tile = config_value<uint32_t>(base, CUBLASLT_ALGO_CONFIG_TILE_ID);
  const uint32_t customs = custom_options(base);
  std::vector<cublasLtMatmulAlgo_t> out;
  for (uint16_t cluster : kClusterShapes)
    for (uint32_t custom = 0; custom < customs; ++custom) {
      cublasLtMatmulAlgo_t algo;
      if (variant(p, base, tile, cluster, custom, algo)) out.push_back(algo);
    }
  return out;
}

std::vector<cublasLtMatmulAlgo_t> rank_configurations(
    cudaStream_t stream, const std::vector<cublasLtMatmulAlgo_t>& configs, size_t keep,
    const std::function<bool(const cublasLtMatmulAlgo_t&)>& launch) {
  const EventChain events(kScreenGroup + 1);
  if (!events.ok()) return {};
  // Two passes, each configuration's faster launch kept: the first launch of a kernel also loads
  // its module (CUDA's lazy loading), host work that can outlast the hold.
  std::vector<float> best(configs.size(), -1.f), ms;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t first = 0; first < configs.size(); first += kScreenGroup) {
      const size_t count = std::min(kScreenGroup, configs.size() - first);
      if (!time_group(stream, events, configs, first, count, 1, launch, ms)) return {};
      for (size_t i = 0; i < count; ++i)
        if (ms[i] >= 0 && (best[first + i] < 0 || ms[i] < best[first + i])) best[first + i] = ms[i];
    }
  std::vector<std::pair<float, size_t>> screened;
  for (size_t i = 0; i < configs.size(); ++i)
    if (best[i] >= 0) screened.emplace_back(best[i], i);
  std::sort(screened.begin(), screened.end());
  screened.resize(std::min(screened.size(), kRefined));
  std::vector<cublasLtMatmulAlgo_t> finalists;
  for (const auto& [t, i] : screened) finalists.push_back(configs[i]);
  if (!time_group(stream, events, finalists, 0, finalists.size(), kRefineRuns, launch, ms)) return {};
  std::vector<std::pair<float, size_t>> refined;
  for (size_t i = 0; i < finalists.size(); ++i)
    if (ms[i] >= 0) refined.emplace_back(ms[i], i);
  std::sort(refined.begin(), refined.end());
  std::vector<cublasLtMatmulAlgo_t> ranked;
  for (size_t r = 0; r < refined.size() && r < keep; ++r) ranked.push_back(finalists[refined[r].second]);
  return ranked;
}

std::vector<cublasLtMatmulAlgo_t> wide_ranking(const LtProduct& p, const std::vector<cublasLtMatmulAlgo_t>& heuristic,
                                               cudaStream_t stream, size_t keep,
                                               const std::function<bool(const cublasLtMatmulAlgo_t&)>& launch) {
  std::vector<cublasLtMatmulAlgo_t> tiles = tile_variants(p, heuristic);
  append_new(tiles, heuristic);
  const std::vector<cublasLtMatmulAlgo_t> best_tiles = rank_configurations(stream, tiles, kTileFinalists, launch);
  if (best_tiles.empty()) return {};
  std::vector<cublasLtMatmulAlgo_t> shapes;
  append_new(shapes, heuristic);
  for (const cublasLtMatmulAlgo_t& t : best_tiles) append_new(shapes, cluster_variants(p, t));
  return rank_configurations(stream, shapes, keep, launch);
}

bool wide_tuning_enabled() {
  const char* e = std::getenv("INGOT_CUDA_WIDE_TUNE");
  return !(e && std::strcmp(e, "0") == 0);
}

}  // namespace ingot::cuda
