// What the CUDA benches (bench/*.cu) share: the error check (cuda_check.h), timing a captured
// graph's replays, float16 buffers to and from the device, the global clock and the cluster
// instructions of their Hopper prototypes.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"

namespace ingot::bench {

// The GPU's global nanosecond clock (%globaltimer), comparable across multiprocessors: the
// prototypes' per-stage and per-CTA timelines.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// `runs` replays of `exec` after `warmups`, each timed by CUDA events around it: microseconds
// divided by `per` (the launches a replay holds), sorted.
inline std::vector<float> replay_times_us(cudaGraphExec_t exec, cudaStream_t s, int warmups, int runs, float per) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < warmups; ++i) CK(cudaGraphLaunch(exec, s));
  std::vector<float> t;
  for (int i = 0; i < runs; ++i) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / per);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t;
}

// `launch` captured `reps` times on `s` into one graph, instantiated (the caller destroys it).
template <class F>
cudaGraphExec_t capture_launches(cudaStream_t s, int reps, F launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) launch();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphDestroy(g));
  return ge;
}

// `launch` captured `reps` times into one graph: the median of 100 replays (after 5), in
// microseconds a launch.
template <class F>
float chain_us(cudaStream_t s, int reps, F launch) {
  cudaGraphExec_t ge = capture_launches(s, reps, launch);
  const std::vector<float> t = replay_times_us(ge, s, 5, 100, float(reps));
  CK(cudaGraphExecDestroy(ge));
  return t[t.size() / 2];
}

inline __half* upload(const std::vector<__half>& h) {
  __half* d;
  CK(cudaMalloc(&d, h.size() * 2));
  CK(cudaMemcpy(d, h.data(), h.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

inline std::vector<__half> download(const __half* d, size_t n) {
  std::vector<__half> h(n);
  CK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

// Arrive on a barrier of another CTA of the cluster (an address from cluster_addr), release at
// CTA scope.
__device__ __forceinline__ void bar_arrive_cluster(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The shared-memory address `addr` of this CTA as the same offset in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t cluster_addr(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace ingot::bench
