// Every cuBLASLt configuration of BERT-base's four batch-32 products, timed, against the
// heuristic's candidates that the engine's autotune chooses among (lt_gemm.cc: its first 32).
// The products are 100 of the ~119 µs of a BERT-base layer at b32 and run at 560-650 TFLOP/s
// (docs/PERFORMANCE.md, developer sessions 28 and 29); this asks whether a configuration the
// heuristic does not offer (tile, stages, cluster shape, CTA swizzle, custom option of each
// algorithm id) is faster.
//
// Row-major products as lt_gemm computes them (its header: C = A · W is the column-major
// Cᵀ = Wᵀ · Aᵀ, W's buffer cuBLASLt's "A"), float16 with float32 accumulation:
//   QKV             4096 x 2304 x 768   bias
//   out-projection  4096 x  768 x 768   bias, the residual as C
//   FFN 1           4096 x 3072 x 768   bias + GELU (tanh form)
//   FFN 2           4096 x  768 x 3072  bias, the residual as C
// Each configuration: 3 launches, then 20 back to back between CUDA events (the mean a launch);
// the 12 fastest again with 200 launches, then printed with their configuration
// (id,tile,stages,cluster,inner,swizzle,custom,splitk). Every algorithm id, where the engine's
// wide tuning (lt_gemm_wide_tune.h) screens those of the heuristic's candidates: this says
// whether another id would win.
//
// Then the 12 again, each launched back to back for about 300 ms, as a batch-32 model keeps the
// GPU: the board is at its power limit there (docs/PERFORMANCE.md, session 28), so what ranks
// configurations in the model is time at the capped clock, i.e. energy a launch. Printed: µs a
// launch sustained, mJ a launch (the board's energy counter) and the median SM clock, from the
// clock monitor of ingot bench (cuda_clock_monitor.h).
// Neither figure ranks close configurations: in 300-500 ms the power controller has not settled
// (session 31: 1320-1980 MHz across the configurations of one shape) and the energy counter is
// coarse (some figures imply more than the board's 700 W); they show gross differences only.
//
// On the GPU machine: lt_sweep [rows] [--heuristic | --clusters]   (rows default 4096: batch 32
// of 128 tokens; --heuristic: the heuristic's candidates alone, each cold and sustained, no sweep:
// a minute instead of several, most of a sweep being the first launch of each kernel's module;
// --clusters: the tiles of the heuristic's first two candidates with every cluster shape, cold
// and sustained for 500 ms: whether sharing operands across more CTAs (TMA multicast: fewer L2
// reads) costs less energy a launch at the power limit)
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_clock_monitor.h"
#include "backends/cuda/lt_algo_attributes.h"
#include "cuda_check.h"

#define LK(x)                                                                                   \
  do {                                                                                          \
    cublasStatus_t s_ = (x);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      printf("%s:%d %s\n", __FILE__, __LINE__, cublasLtGetStatusName(s_));                      \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

namespace {

using ingot::cuda::algo_from_config;
using ingot::cuda::AlgoConfig;
using ingot::cuda::cap_array;
using ingot::cuda::cap_value;
using ingot::cuda::config_of;
using ingot::cuda::kClusterShapes;

constexpr size_t kWorkspace = size_t(32) << 20;  // lt_gemm's kGemmWorkspaceBytes
constexpr int kQuick = 20, kRefine = 200, kKeep = 12, kHeuristic = 32;

struct Shape {
  const char* name;
  int64_t n, k;
  cublasLtEpilogue_t epilogue;
  bool residual;
};

struct Problem {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // cuBLASLt's A (W), B (our A), C/D
  void *w = nullptr, *x = nullptr, *bias = nullptr, *c = nullptr, *out = nullptr;
  float beta = 0.f;
};

void* random_device(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<__half> h(n);
  for (auto& v : h) v = __float2half(u(rng));
  void* d;
  CK(cudaMalloc(&d, n * 2));
  CK(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
  return d;
}

Problem make_problem(const Shape& s, int64_t m, std::mt19937& rng) {
  Problem p;
  LK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t no = CUBLAS_OP_N;
  LK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &no, sizeof(no)));
  LK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof(no)));
  LK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &s.epilogue, sizeof(s.epilogue)));
  p.w = random_device(size_t(s.k) * size_t(s.n), 0.04f, rng);
  p.x = random_device(size_t(m) * size_t(s.k), 1.f, rng);
  p.bias = random_device(size_t(s.n), 0.1f, rng);
  p.c = s.residual ? random_device(size_t(m) * size_t(s.n), 1.f, rng) : nullptr;
  CK(cudaMalloc(&p.out, size_t(m) * size_t(s.n) * 2));
  p.beta = s.residual ? 1.f : 0.f;
  LK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias, sizeof(p.bias)));
  LK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16F, uint64_t(s.n), uint64_t(s.k), s.n));
  LK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16F, uint64_t(s.k), uint64_t(m), s.k));
  LK(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16F, uint64_t(s.n), uint64_t(m), s.n));
  return p;
}

// The configuration as printed: id,tile,stages,cluster,inner,swizzle,custom,splitk (the first
// eight of config_of's nine).
std::string describe(const cublasLtMatmulAlgo_t& algo) {
  const AlgoConfig c = config_of(algo);
  std::string out;
  for (size_t i = 0; i + 1 < c.size(); ++i) out += (i ? "," : "") + std::to_string(c[i]);
  return out;
}

struct Sustained {
  float us, mj;
  unsigned mhz;
};

struct Timer {
  cublasLtHandle_t lt;
  cudaStream_t stream;
  void* workspace;
  cudaEvent_t e0, e1;

  // Mean µs a launch of `reps` back to back after 3 untimed; negative when a launch fails.
  float time(const Problem& p, const cublasLtMatmulAlgo_t& algo, int reps) {
    const float alpha = 1.f;
    auto launch = [&] {
      return cublasLtMatmul(lt, p.op, &alpha, p.w, p.a, p.x, p.b, &p.beta, p.c ? p.c : p.out, p.d, p.out, p.d, &algo,
                            workspace, kWorkspace, stream);
    };
    for (int i = 0; i < 3; ++i)
      if (launch() != CUBLAS_STATUS_SUCCESS) return -1.f;
    CK(cudaEventRecord(e0, stream));
    for (int i = 0; i < reps; ++i)
      if (launch() != CUBLAS_STATUS_SUCCESS) return -1.f;
    CK(cudaEventRecord(e1, stream));
    if (cudaEventSynchronize(e1) != cudaSuccess) {
      printf("a launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      exit(1);
    }
    float ms = 0.f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms * 1000.f / float(reps);
  }

  // About `ms` of launches back to back (sized from the launch's cold time): µs and mJ a launch
  // and the median SM clock (ingot bench's clock monitor, NVML; mJ -1 without it).
  Sustained sustained(const Problem& p, const cublasLtMatmulAlgo_t& algo, float cold_us, float ms = 300.f) {
    const int reps = std::max(100, int(ms * 1000.f / cold_us));
    const float alpha = 1.f;
    CK(cudaStreamSynchronize(stream));
    auto monitor = ingot::cuda::start_clock_monitor(0, std::chrono::milliseconds(20));
    CK(cudaEventRecord(e0, stream));
    for (int i = 0; i < reps; ++i)
      cublasLtMatmul(lt, p.op, &alpha, p.w, p.a, p.x, p.b, &p.beta, p.c ? p.c : p.out, p.d, p.out, p.d, &algo,
                     workspace, kWorkspace, stream);
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    const ingot::DeviceClockReport r = monitor ? (*monitor)->stop() : ingot::DeviceClockReport{};
    float elapsed = 0.f;
    CK(cudaEventElapsedTime(&elapsed, e0, e1));
    return {elapsed * 1000.f / float(reps), r.energy_j >= 0 ? float(r.energy_j * 1000.0 / reps) : -1.f,
            unsigned(r.sm_mhz_median)};
  }
};

// `algo` made again from its nine integers, as an engine file keeps a tuned product
// (lt_gemm_tactics.cc): whether the heuristic's candidates carry anything else that a saved
// configuration would lose.
cublasLtMatmulAlgo_t rebuilt(cublasLtHandle_t lt, const cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulAlgo_t out{};
  if (!algo_from_config(lt, CUBLAS_COMPUTE_32F, CUDA_R_16F, CUDA_R_16F, config_of(algo), out)) {
    printf("cuBLASLt refused the configuration %s read from its own candidate\n", describe(algo).c_str());
    exit(1);
  }
  return out;
}

// Every configuration of every algorithm id that cublasLtMatmulAlgoCheck accepts for p, split-K
// left at one (the products are 4096 rows: enough tiles without it).
std::vector<cublasLtMatmulAlgo_t> configurations(cublasLtHandle_t lt, const Problem& p, int& tried) {
  int ids[256], count = 0;
  LK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, 256,
                              ids, &count));
  std::vector<cublasLtMatmulAlgo_t> valid;
  tried = 0;
  for (int i = 0; i < count; ++i) {
    cublasLtMatmulAlgo_t base;
    if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                               ids[i], &base) != CUBLAS_STATUS_SUCCESS)
      continue;
    std::vector<uint32_t> tiles = cap_array<uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<uint32_t> stages = cap_array<uint32_t>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
    if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
    const uint32_t swizzles = cap_value<uint32_t>(base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 2 : 1;
    const uint32_t customs = std::min<uint32_t>(cap_value<uint32_t>(base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), 7) + 1;
    for (uint32_t tile : tiles)
      for (uint32_t stage : stages)
        for (uint16_t cluster : kClusterShapes)
          for (uint32_t swizzle = 0; swizzle < swizzles; ++swizzle)
            for (uint32_t custom = 0; custom < customs; ++custom) {
              cublasLtMatmulAlgo_t algo = base;
              ++tried;
              if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile)) ||
                  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof(stage)) ||
                  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                       sizeof(cluster)) ||
                  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle,
                                                       sizeof(swizzle)) ||
                  cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                                       sizeof(custom)))
                continue;
              cublasLtMatmulHeuristicResult_t r{};
              if (cublasLtMatmulAlgoCheck(lt, p.op, p.a, p.b, p.d, p.d, &algo, &r) != CUBLAS_STATUS_SUCCESS ||
                  r.workspaceSize > kWorkspace)
                continue;
              valid.push_back(algo);
            }
  }
  return valid;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t m = argc > 1 ? std::atoll(argv[1]) : 4096;
  const bool heuristic_only = argc > 2 && std::string(argv[2]) == "--heuristic";
  const bool clusters_only = argc > 2 && std::string(argv[2]) == "--clusters";
  std::mt19937 rng(7);
  Timer t{};
  LK(cublasLtCreate(&t.lt));
  CK(cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking));
  CK(cudaMalloc(&t.workspace, kWorkspace));
  CK(cudaEventCreate(&t.e0));
  CK(cudaEventCreate(&t.e1));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("lt_sweep: %s, cuBLASLt %zu, %lld rows, float16, fp32 accumulation; us a launch (mean of %d back to back)\n",
         prop.name, cublasLtGetVersion(), static_cast<long long>(m), kRefine);
  const Shape shapes[] = {{"QKV", 2304, 768, CUBLASLT_EPILOGUE_BIAS, false},
                          {"out-projection", 768, 768, CUBLASLT_EPILOGUE_BIAS, true},
                          {"FFN 1", 3072, 768, CUBLASLT_EPILOGUE_GELU_BIAS, false},
                          {"FFN 2", 768, 3072, CUBLASLT_EPILOGUE_BIAS, true}};
  for (const Shape& s : shapes) {
    const Problem p = make_problem(s, m, rng);
    const double gflop = 2.0 * double(m) * double(s.n) * double(s.k) / 1e9;
    // The heuristic's candidates, as the engine's autotune sees them.
    cublasLtMatmulPreference_t pref;
    LK(cublasLtMatmulPreferenceCreate(&pref));
    LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                            sizeof(kWorkspace)));
    cublasLtMatmulHeuristicResult_t results[kHeuristic]{};
    int found = 0;
    LK(cublasLtMatmulAlgoGetHeuristic(t.lt, p.op, p.a, p.b, p.d, p.d, pref, kHeuristic, results, &found));
    float first = -1.f, best_h = 1e30f;
    std::string first_desc, best_h_desc;
    cublasLtMatmulAlgo_t first_algo{};
    for (int i = 0; i < found; ++i) {
      if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const float us = t.time(p, results[i].algo, kRefine);
      if (us < 0.f) continue;
      if (heuristic_only) {
        const Sustained h = t.sustained(p, results[i].algo, us);
        const cublasLtMatmulAlgo_t again = rebuilt(t.lt, results[i].algo);
        const bool same = std::memcmp(&again, &results[i].algo, sizeof(again)) == 0;
        const float us_again = same ? us : t.time(p, again, kRefine);
        printf("  %s candidate %d: %.2f us  sustained %.2f us %.3f mJ %u MHz  [%s]  rebuilt: %s %.2f us\n", s.name, i, us,
               h.us, h.mj, h.mhz, describe(results[i].algo).c_str(), same ? "same bytes" : "DIFFERENT bytes", us_again);
      }
      if (first < 0.f) first = us, first_desc = describe(results[i].algo), first_algo = results[i].algo;
      if (us < best_h) best_h = us, best_h_desc = describe(results[i].algo);
    }
    if (clusters_only) {
      for (int i = 0; i < std::min(found, 2); ++i) {
        for (uint16_t cluster : kClusterShapes) {
          cublasLtMatmulAlgo_t algo = results[i].algo;
          cublasLtMatmulHeuristicResult_t r{};
          if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                                   sizeof(cluster)) != CUBLAS_STATUS_SUCCESS ||
              cublasLtMatmulAlgoCheck(t.lt, p.op, p.a, p.b, p.d, p.d, &algo, &r) != CUBLAS_STATUS_SUCCESS ||
              r.workspaceSize > kWorkspace)
            continue;
          const float us = t.time(p, algo, kRefine);
          if (us < 0.f) continue;
          const Sustained h = t.sustained(p, algo, us, 500.f);
          printf("  %s candidate %d cluster %u: %.2f us  sustained %.2f us %.3f mJ %u MHz  [%s]\n", s.name, i,
                 unsigned(cluster), us, h.us, h.mj, h.mhz, describe(algo).c_str());
        }
      }
    }
    if (heuristic_only || clusters_only) {
      cublasLtMatmulPreferenceDestroy(pref);
      continue;
    }
    int tried = 0;
    std::vector<cublasLtMatmulAlgo_t> all = configurations(t.lt, p, tried);
    std::vector<std::pair<float, size_t>> quick;
    for (size_t i = 0; i < all.size(); ++i) {
      const float us = t.time(p, all[i], kQuick);
      if (us > 0.f) quick.emplace_back(us, i);
    }
    std::sort(quick.begin(), quick.end());
    std::vector<std::pair<float, size_t>> refined;
    for (size_t j = 0; j < quick.size() && j < size_t(kKeep); ++j)
      refined.emplace_back(t.time(p, all[quick[j].second], kRefine), quick[j].second);
    std::sort(refined.begin(), refined.end());
    printf("\n== %s %lldx%lldx%lld (%.1f GFLOP): heuristic's first %.2f us (%.0f TFLOP/s) [%s], best of its %d %.2f us "
           "[%s]; %zu of %d configurations valid, %zu ran\n",
           s.name, static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k), gflop, first,
           gflop / first * 1e3, first_desc.c_str(), found, best_h, best_h_desc.c_str(), all.size(), tried, quick.size());
    if (first > 0.f) {
      const Sustained h = t.sustained(p, first_algo, first);
      printf("  heuristic's first sustained %.2f us %.3f mJ %u MHz\n", h.us, h.mj, h.mhz);
    }
    for (const auto& [us, i] : refined) {
      const Sustained h = t.sustained(p, all[i], us);
      printf("  %.2f us  %.0f TFLOP/s  %.3fx the heuristic's best  sustained %.2f us %.3f mJ %u MHz  %lldx%lldx%lld:%s\n",
             us, gflop / us * 1e3, us / best_h, h.us, h.mj, h.mhz, static_cast<long long>(m),
             static_cast<long long>(s.n), static_cast<long long>(s.k), describe(all[i]).c_str());
    }
    cublasLtMatmulPreferenceDestroy(pref);
  }
  return 0;
}
