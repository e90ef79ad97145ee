// A BERT-base layer's products and LayerNorms at 128 rows (batch 1, sequence 128), float16, the
// attention core left out, twelve layers with weights of their own (170 MB, past the 50 MB L2)
// in one CUDA graph: what the engine's products cost between its kernels, measured in seconds a
// run instead of an engine build and bench a variant (docs/PERFORMANCE.md, developer session 22).
// Per layer, as the engine runs it:
//   qkv = h · Wqkv + bqkv                          [128 x 2304]
//   z   = qkv[:, 0:768] · Wo + bo + h              (the residual as cuBLASLt's C)
//   h1  = LayerNorm(z)                             (asks for W1 into L2, as the engine's does)
//   g   = GELU(h1 · W1 + b1)                       [128 x 3072]
//   z2  = g · W2 + b2 + h1
//   h   = LayerNorm(z2)                            (asks for the next layer's Wqkv)
// Products go through lt_gemm, so INGOT_CUDA_OWN_GEMM=1 puts those it takes on ingot's own split-K
// kernel (gemm_split_k.h); ingot's kernels are launched with dependent launch and the graph's
// programmatic edges moved to launch completion, as a CUDA context does for a graph this small
// (INGOT_CUDA_PDL=0 turns that off).
//
// Built for sm_90, linked with libingot. On the GPU machine, one process a variant:
//   layer_chain_bench                        cuBLASLt's products
//   INGOT_CUDA_OWN_GEMM=1 layer_chain_bench  ingot's own where they fit
// Each prints us a layer (median of 200 replays of the graph) and a checksum of the last layer's
// h, which the variants must agree on to fp16 rounding.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_dependent_launch.h"
#include "backends/cuda/gemm_split_k.h"
#include "backends/cuda/lt_gemm.h"
#include "backends/cuda/norm_impl.h"
#include "cuda_bench_util.cuh"


namespace {

using namespace ingot::cuda;

constexpr int kRows = 128, kHidden = 768, kInner = 3072, kLayers = 12;

__half* random_device(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<__half> h(n);
  for (auto& v : h) v = __float2half(u(rng));
  return ingot::bench::upload(h);
}

struct Layer {
  __half *wqkv, *bqkv, *wo, *bo, *w1, *b1, *w2, *b2, *gamma1, *beta1, *gamma2, *beta2;
};

L2Prefetch prefetch_of(const void* w, size_t bytes) {
  L2Prefetch p;
  p.ptr[0] = w;
  p.bytes[0] = uint32_t(bytes);
  p.count = 1;
  return p;
}

}  // namespace

int main() {
  std::mt19937 rng(11);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CudaHandles h;
  h.stream = s;
  if (cublasLtCreate(&h.lt) != CUBLAS_STATUS_SUCCESS) return 1;
  CK(cudaDeviceGetAttribute(&h.sm_count, cudaDevAttrMultiProcessorCount, 0));
  void* ws;
  CK(cudaMalloc(&ws, kGemmWorkspaceBytes));
  h.gemm_workspace = ws, h.gemm_workspace_bytes = kGemmWorkspaceBytes;
  std::vector<Layer> layers(kLayers);
  for (Layer& l : layers) {
    l.wqkv = random_device(size_t(kHidden) * 3 * kHidden, 0.04f, rng), l.bqkv = random_device(3 * kHidden, 0.1f, rng);
    l.wo = random_device(size_t(kHidden) * kHidden, 0.04f, rng), l.bo = random_device(kHidden, 0.1f, rng);
    l.w1 = random_device(size_t(kHidden) * kInner, 0.04f, rng), l.b1 = random_device(kInner, 0.1f, rng);
    l.w2 = random_device(size_t(kInner) * kHidden, 0.02f, rng), l.b2 = random_device(kHidden, 0.1f, rng);
    l.gamma1 = random_device(kHidden, 1.f, rng), l.beta1 = random_device(kHidden, 0.1f, rng);
    l.gamma2 = random_device(kHidden, 1.f, rng), l.beta2 = random_device(kHidden, 0.1f, rng);
  }
  __half* x = random_device(size_t(kRows) * kHidden, 1.f, rng);  // the first layer's input
  __half *hid, *qkv, *z, *h1, *g, *z2;
  CK(cudaMalloc(&hid, size_t(kRows) * kHidden * 2));
  CK(cudaMalloc(&qkv, size_t(kRows) * 3 * kHidden * 2));
  CK(cudaMalloc(&z, size_t(kRows) * kHidden * 2));
  CK(cudaMalloc(&h1, size_t(kRows) * kHidden * 2));
  CK(cudaMalloc(&g, size_t(kRows) * kInner * 2));
  CK(cudaMalloc(&z2, size_t(kRows) * kHidden * 2));

  auto product = [&](const void* a, int64_t lda, const void* w, const void* bias, const void* c_in, void* d, int64_t n,
                     int64_t k, GemmActivation act) {
    GemmDesc desc;
    desc.m = kRows, desc.n = n, desc.k = k, desc.lda = lda, desc.dtype = ingot::DType::kFloat16;
    desc.bias = bias, desc.activation = act;
    if (c_in) desc.beta = 1.f, desc.c_in = c_in;
    const ingot::Status st = lt_gemm(h, desc, a, w, d);
    if (!st.is_ok()) {
      printf("lt_gemm: %s\n", st.message().c_str());
      exit(1);
    }
  };
  auto layer_norm = [&](const void* in, const void* gamma, const void* beta, void* out, L2Prefetch next) {
    RowNormLaunch n;
    n.dtype = n.param_dtype = ingot::DType::kFloat16;
    n.x = in, n.gamma = gamma, n.beta = beta, n.y = out, n.params_constant = true;
    n.rows = n.x_period = kRows, n.d = kHidden, n.epsilon = 1e-12f, n.sm_count = h.sm_count;
    n.prefetch = next;
    CK(launch_row_norm(n, s));
  };
  auto run = [&] {
    for (int i = 0; i < kLayers; ++i) {
      const Layer& l = layers[size_t(i)];
      const __half* in = i == 0 ? x : hid;
      product(in, 0, l.wqkv, l.bqkv, nullptr, qkv, 3 * kHidden, kHidden, GemmActivation::kNone);
      product(qkv, 3 * kHidden, l.wo, l.bo, in, z, kHidden, kHidden, GemmActivation::kNone);
      layer_norm(z, l.gamma1, l.beta1, h1, prefetch_of(l.w1, size_t(kHidden) * kInner * 2));
      product(h1, 0, l.w1, l.b1, nullptr, g, kInner, kHidden, GemmActivation::kGeluTanh);
      product(g, 0, l.w2, l.b2, h1, z2, kHidden, kInner, GemmActivation::kNone);
      const Layer& next = layers[size_t((i + 1) % kLayers)];
      layer_norm(z2, l.gamma2, l.beta2, hid, prefetch_of(next.wqkv, size_t(kHidden) * 3 * kHidden * 2));
    }
  };

  run();  // outside a graph first: lt_gemm's autotuning
  CK(cudaStreamSynchronize(s));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  {
    // As a context decides for its graph (INGOT_CUDA_PDL unset: on for small activations, as here).
    const DependentLaunchScope scope(dependent_launch_pays(int64_t(kRows) * kInner * 2));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    run();
    CK(cudaStreamEndCapture(s, &graph));
  }
  const bool dependent = dependent_launch_mode() == DependentLaunchMode::kOn ||
                         (dependent_launch_mode() == DependentLaunchMode::kAuto &&
                          dependent_launch_pays(int64_t(kRows) * kInner * 2));
  const int moved = dependent ? trigger_dependents_at_launch(graph) : 0;
  if (moved < 0) {
    printf("programmatic edges could not be moved to launch completion\n");
    return 1;
  }
  CK(cudaGraphInstantiate(&exec, graph, 0));
  const std::vector<float> t = ingot::bench::replay_times_us(exec, s, 10, 200, float(kLayers));
  std::vector<__half> out(size_t(kRows) * kHidden);
  CK(cudaMemcpy(out.data(), hid, out.size() * 2, cudaMemcpyDeviceToHost));
  double checksum = 0;
  for (const __half& v : out) checksum += std::fabs(double(__half2float(v)));
  const char* own = std::getenv("INGOT_CUDA_OWN_GEMM");
  printf("BERT-base layer without its attention core, %d rows fp16, graph of %d layers: %.2f us a layer "
         "(median of 200; p10 %.2f, p90 %.2f); products %s, dependent launch %s (%d edges at launch completion); "
         "checksum %.3f\n",
         kRows, kLayers, t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10],
         own && std::string(own) == "1" && split_k_product_enabled() ? "own where they fit" : "cuBLASLt",
         dependent ? "on" : "off", moved, checksum);
  return 0;
}
