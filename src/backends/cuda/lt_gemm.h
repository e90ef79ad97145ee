// Row-major matrix products through cuBLASLt, for every CUDA kernel that needs one
// (MatMul, Gemm, ingot.FusedMatMul, ingot.Attention's projections).
//
//   D[b] = act(alpha · op(A[b]) · op(B[b]) + beta · C[b] + bias)     for b < batch (D = C unless c_in)
//
// All matrices are row-major; op(X) is X or Xᵀ. A, B and C share one float dtype (float32,
// float16 or bfloat16); accumulation is float32 (TF32 tensor cores only when
// CudaHandles::allow_tf32). The bias has C's dtype and length n, and is added before the
// activation in the same kernel (a cuBLASLt epilogue). The algorithm for each shape is chosen
// once, on its first run outside graph capture (the heuristic's candidates timed, or for large
// products every configuration of their algorithms: lt_gemm_wide_tune.h), and cached, so a call
// is capturable into a CUDA graph.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"

namespace ingot::cuda {

enum class GemmActivation { kNone, kRelu, kGeluTanh };

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  // Element strides between consecutive matrices of a batch; 0 broadcasts one matrix to all.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // Leading dimensions (elements between rows, row-major); 0 means dense (the column count).
  int64_t lda = 0, ldb = 0, ldc = 0;
  DType dtype = DType::kFloat32;
  float alpha = 1.0f, beta = 0.0f;
  // The C that beta scales, when it is not the output itself (a residual added in the epilogue:
  // D = A·B + bias + C into another buffer); the output's layout, except that its leading
  // dimension is ldc_in when that is nonzero (rows picked out of a longer matrix: a
  // classifier token's residual read from the whole sequence). Null: C is the output.
  const void* c_in = nullptr;
  int64_t ldc_in = 0;
  const void* bias = nullptr;  // [n] or null
  GemmActivation activation = GemmActivation::kNone;
  // C and D (and the bias) float32 while A and B are `dtype`: partial products that a kernel
  // after sums in float32 (product_norm.cc's K split).
  bool float32_output = false;
};

// Scratch cuBLASLt may use: each context's CudaHandles::gemm_workspace is this large.
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

// Enqueues the product on handles.stream, with handles.gemm_workspace as cuBLASLt's scratch.
// Errors name the shape and dtype.
Status lt_gemm(const CudaHandles& handles, const GemmDesc& desc, const void* a, const void* b, void* c);

// Choosing among cuBLASLt's algorithms inside the captured graph (CudaContext::capture).
//
// A shape's first run times the heuristic's candidates one by one with L2 cleared, and keeps the
// kGraphTuneCandidates fastest, ranked. Those trials miss what the graph does to a product: its
// inputs just written (in L2), the kernels before and after it, dependent launch around it. Two
// candidates can time alike there and differ in the graph (BERT-base b1's QKV product: two
// machines picked 64x64 and 128x24 tiles; 4.8 and 5.7 us in the graph, traced, developer session
// 24). So the context that first captures a graph with a product replays it with each ranked
// candidate in turn and keeps the fastest; the choice then holds for the process. Only graphs of
// small activations tune (batch 1, where a product's neighbours decide its time); the first
// graph of larger ones keeps the trials' first (CudaContext::capture). H100, alternating A/B
// (GPU compute median of 300 runs, ms, tuned / not): DistilBERT b1 0.1884 / 0.1932, 0.1881 /
// 0.1932, 0.1875 / 0.1929; BERT-base b1 0.3690 / 0.3773, 0.3679 / 0.3897, 0.3692 / 0.3813.
// Eight candidates, where cuBLASLt offers 7-8 for these products: every one is tried in the graph
// (the cold trials' third or later was the graph's fastest often enough; session 25, A/B, eight /
// three: DistilBERT b1 0.1840 / 0.1884, 0.1837 / 0.1884, 0.1842 / 0.1885; BERT-base b1 0.3646 /
// 0.3698, 0.3639 / 0.3725, 0.3644 / 0.3686). Each candidate is one more capture and 80 replays
// of the graph in the shape's first run: 1-2 s in all for BERT-base b1's product shapes.
constexpr int kGraphTuneCandidates = 8;

struct GemmPlan;  // a cached product configuration

// While one lives, the products run on this thread are recorded (each plan once) when they have
// more than one ranked candidate.
class GemmTuneRecorder {
 public:
  GemmTuneRecorder();
  ~GemmTuneRecorder();
  GemmTuneRecorder(const GemmTuneRecorder&) = delete;
  GemmTuneRecorder& operator=(const GemmTuneRecorder&) = delete;
  const std::vector<GemmPlan*>& plans() const { return plans_; }

 private:
  std::vector<GemmPlan*> plans_;
  std::vector<GemmPlan*>* saved_;
};

int gemm_choices(const GemmPlan* p);          // ranked candidates left to try (1 once tuned)
int gemm_choice(const GemmPlan* p);           // the candidate in use
void set_gemm_choice(GemmPlan* p, int i);     // later calls (and captures) use candidate i
void finish_gemm_choice(GemmPlan* p);         // the choice is final for this process
std::string gemm_plan_name(const GemmPlan* p);

// Tuning at build time (CudaExecutor::tune). A large product's configuration chosen by wide
// tuning, as an engine file keeps it: the product (shape, strides, leading dimensions, dtype,
// epilogue, pointer alignments, workspace cap, as text) and cuBLASLt's configuration of it
// (algorithm id, tile, stages, cluster shape, inner shape, CTA swizzling, custom option, K split,
// reduction scheme).
struct GemmTactic {
  std::string product;
  std::array<int64_t, 9> config{};
};

// While one lives, products of at least kWideTuneMinFlop (lt_gemm_wide_tune.h) that run for the
// first time on this thread are tuned wide, and the tactics of the products run on this thread
// (tuned now or given by add_gemm_tactics) are collected. Wide tuning costs seconds per product
// shape, hence only at build time.
class WideTuneScope {
 public:
  WideTuneScope();
  ~WideTuneScope();
  WideTuneScope(const WideTuneScope&) = delete;
  WideTuneScope& operator=(const WideTuneScope&) = delete;
  std::vector<GemmTactic> tactics() const;  // each product once, the configuration it runs now
  void record(GemmPlan* plan);              // lt_gemm's: a product with a tactic ran

 private:
  std::vector<GemmPlan*> plans_;
  WideTuneScope* saved_;
};

// Products matching a tactic's product (first run after this call) run its configuration where
// cuBLASLt accepts it, instead of timing the heuristic's candidates.
void add_gemm_tactics(const std::vector<GemmTactic>& tactics);

// INGOT_CUDA_GRAPH_TUNE=0 turns graph tuning off (an A/B switch).
bool graph_tuning_enabled();

}  // namespace ingot::cuda
