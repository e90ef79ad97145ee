// lt_gemm(): row-major products on cuBLASLt (see lt_gemm.h).
//
// Row-major through the transposition identity: a row-major [r, c] matrix with leading
// dimension ld is, byte for byte, the column-major [c, r] matrix (its transpose) with the same
// ld. So row-major C = op(A)·op(B) is computed as the column-major product
// Cᵀ = op(B)ᵀ·op(A)ᵀ, with B's buffer as cuBLASLt's "A" and A's buffer as its "B". Every
// layout stays CUBLASLT_ORDER_COL, the order all of cuBLASLt's kernels and epilogues support
// (ORDER_ROW layouts exclude many algorithms), and the row-major bias over C's columns is the
// column-major bias over Cᵀ's rows, which is what CUBLASLT_EPILOGUE_BIAS broadcasts.
//
// Descriptors, layouts and the heuristic's algorithm are made once per key (shape, strides,
// dtype, epilogue, pointer alignments, workspace cap, device) and kept in a process-wide map:
// lt_gemm is called on hot eager paths and inside CUDA-graph capture, where a heuristic
// query per call would cost more than a small GEMM itself.
#include "backends/cuda/lt_gemm.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_graph_gemm_clears.h"
#include "backends/cuda/cuda_stream_hold.h"
#include "backends/cuda/gemm_split_k.h"
#include "backends/cuda/lt_algo_attributes.h"
#include "backends/cuda/lt_gemm_plan.h"
#include "backends/cuda/lt_gemm_wide_tune.h"

namespace ingot::cuda {
namespace {

// Alignment preferences are capped here: cuBLASLt assumes 256 bytes when none is given.
constexpr uint32_t kMaxAlignment = 256;
// cuBLASLt's workspace must be 256-byte aligned.
constexpr uintptr_t kWorkspaceAlignment = 256;

// Largest power of two (≤ kMaxAlignment) dividing the address of every matrix of a batch. (Row
// pitches are in the layouts the heuristic sees; these hints are about the pointers.)
uint32_t alignment_of(const void* p, int64_t batch, int64_t stride, size_t elem) {
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p)) | kMaxAlignment;
  if (batch > 1 && stride != 0) bits |= uint64_t(stride) * elem;
  return uint32_t(uint64_t(1) << std::countr_zero(bits));
}

using Plan = GemmPlan;

// The plans run on this thread while a GemmTuneRecorder lives (each once).
thread_local std::vector<GemmPlan*>* recorded_plans = nullptr;
struct PlanCache {
  std::mutex mutex;
  std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
};

PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;  // never destroyed: plans may be used until exit
  return *cache;
}

std::string shape_text(const GemmDesc& d) {
  return "m=" + std::to_string(d.m) + " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) +
         " batch=" + std::to_string(d.batch) + " dtype=" + dtype_name(d.dtype) +
         (d.float32_output ? "->float32" : "") + (d.trans_a ? " transA" : "") + (d.trans_b ? " transB" : "");
}

Status gemm_error(const GemmDesc& d, const std::string& what) {
  return Status(ErrorCode::kInternal, "cuBLASLt GEMM (" + shape_text(d) + "): " + what);
}

Status check(cublasStatus_t s, const GemmDesc& d, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return gemm_error(d, std::string(call) + " failed: " + cublasLtGetStatusName(s) + " (" + cublasLtGetStatusString(s) +
                           ")");
}

cublasLtEpilogue_t epilogue_of(GemmActivation act, bool bias) {
  switch (act) {
    case GemmActivation::kNone: return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case GemmActivation::kRelu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case GemmActivation::kGeluTanh: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <class T>
cublasStatus_t set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, T v) {
  return cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof(v));
}

// A column-major layout of `rows` x `cols` with leading dimension ld, batched when batch > 1.
Status make_layout(cublasLtMatrixLayout_t& out, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                   int64_t batch, int64_t stride, const GemmDesc& d) {
  INGOT_RETURN_IF_ERROR(check(cublasLtMatrixLayoutCreate(&out, type, uint64_t(rows), uint64_t(cols), ld), d,
                              "cublasLtMatrixLayoutCreate"));
  if (batch > 1) {
    INGOT_RETURN_IF_ERROR(check(set_layout(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(batch)), d,
                                "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
    INGOT_RETURN_IF_ERROR(check(set_layout(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride), d,
                                "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)"));
  }
  return Status::ok();
}

// Heuristic candidates considered per shape, and timed runs of each (autotune()), enqueued
// behind a hold of the stream long enough for the host to enqueue them all (cuda_stream_hold.h).
constexpr int kCandidates = 32;
constexpr int kTrialRuns = 5;
constexpr int kTrialHoldMicroseconds = 500;
// Products of at most this many rows also try split-K variants of the heuristic's first
// kSplitKBases candidates (see add_split_k_variants).
constexpr int64_t kSplitKMaxRows = 16;
constexpr int kSplitKBases = 8;

// Builds the descriptors and asks the heuristic for its candidate algorithms of `key`.
Status make_plan(const CudaHandles& handles, const GemmDesc& d, const PlanKey& key, const void* bias, Plan& plan,
                 std::vector<cublasLtMatmulAlgo_t>& candidates) {
  cudaDataType_t type{};
  data_type_of(d.dtype, type);
  const cudaDataType_t out_type = output_type_of(key);
  cublasComputeType_t compute = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  INGOT_RETURN_IF_ERROR(check(cublasLtMatmulDescCreate(&plan.op, compute, CUDA_R_32F), d, "cublasLtMatmulDescCreate"));
  // cuBLASLt's A is our B: op(B)ᵀ is [n, k]. B stored [k, n] row-major reads column-major as
  // [n, k] (no transpose); stored [n, k] (transB) it reads as [k, n] and needs one.
  cublasOperation_t op_a = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  INGOT_RETURN_IF_ERROR(check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
                              d, "cublasLtMatmulDescSetAttribute(TRANSA)"));
  INGOT_RETURN_IF_ERROR(check(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
                              d, "cublasLtMatmulDescSetAttribute(TRANSB)"));
  cublasLtEpilogue_t epilogue = epilogue_of(key.activation, key.has_bias);
  INGOT_RETURN_IF_ERROR(check(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), d,
      "cublasLtMatmulDescSetAttribute(EPILOGUE)"));
  if (key.has_bias) {
    // The bias has C's dtype, cuBLASLt's default bias type (the output's), so no
    // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE. The heuristic reads the pointer's alignment, so
    // set a real one before asking.
    INGOT_RETURN_IF_ERROR(check(
        cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), d,
        "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  }
  INGOT_RETURN_IF_ERROR(make_layout(plan.a, type, key.trans_b ? key.k : key.n, key.trans_b ? key.n : key.k, key.ldb,
                                    key.batch, key.stride_b, d));
  INGOT_RETURN_IF_ERROR(make_layout(plan.b, type, key.trans_a ? key.m : key.k, key.trans_a ? key.k : key.m, key.lda,
                                    key.batch, key.stride_a, d));
  INGOT_RETURN_IF_ERROR(make_layout(plan.c, out_type, key.n, key.m, key.ldc, key.batch, key.stride_c, d));
  if (key.ldc_in != key.ldc)
    INGOT_RETURN_IF_ERROR(make_layout(plan.c_in, out_type, key.n, key.m, key.ldc_in, key.batch, key.stride_c, d));

  cublasLtMatmulPreference_t pref = nullptr;
  INGOT_RETURN_IF_ERROR(check(cublasLtMatmulPreferenceCreate(&pref), d, "cublasLtMatmulPreferenceCreate"));
  struct PrefGuard {
    cublasLtMatmulPreference_t p;
    ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
  } pref_guard{pref};
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v, const char* what) {
    return check(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof(v)), d, what);
  };
  INGOT_RETURN_IF_ERROR(set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(key.workspace),
                                 "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"));
  // cuBLASLt's A/B are our B/A.
  INGOT_RETURN_IF_ERROR(set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b,
                                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_A_BYTES)"));
  INGOT_RETURN_IF_ERROR(set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a,
                                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_B_BYTES)"));
  INGOT_RETURN_IF_ERROR(set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c,
                                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_C_BYTES)"));
  INGOT_RETURN_IF_ERROR(set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c,
                                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT_D_BYTES)"));

  int found = 0;
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  INGOT_RETURN_IF_ERROR(check(cublasLtMatmulAlgoGetHeuristic(handles.lt, plan.op, plan.a, plan.b, plan.c_layout(), plan.c, pref,
                                                             kCandidates, results, &found),
                              d, "cublasLtMatmulAlgoGetHeuristic"));
  candidates.clear();
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) candidates.push_back(results[i].algo);
  if (candidates.empty()) return gemm_error(d, "cuBLASLt has no algorithm for this shape, alignment and epilogue");
  plan.algo = candidates[0];
  return Status::ok();
}


// For products of a few rows (a classifier's last layer after gather_rows_early: one row per
// sequence), the heuristic's candidates split K little or not at all, so a few CTAs stream all the
// weights (DistilBERT's last FFN product at batch 1, one row, K = 3072: 4 CTAs, 12 us in Nsight
// Compute, 11.4 us as a cold trial). Each of its first kSplitKBases candidates that can split K
// is offered again with K split 2 to 32 ways under each reduction scheme it supports, where
// cuBLASLt accepts the configuration and its workspace fits; autotune() times them with the rest
// (there: K split 8 ways, reduced in float32, 10.0 us). H100, alternating A/B: DistilBERT b1
// 2 us and BERT-base b1 1-8 us faster; at b32 (32 rows) mixed (DistilBERT 2-7 us slower), hence
// kSplitKMaxRows. Offering them for 128 rows (batch-1 layers) won nothing: none was picked.
void add_split_k_variants(const CudaHandles& h, const PlanKey& key, Plan& plan,
                          std::vector<cublasLtMatmulAlgo_t>& candidates) {
  const size_t bases = std::min<size_t>(candidates.size(), kSplitKBases);
  for (size_t i = 0; i < bases; ++i) {
    if (!cap_value<int32_t>(candidates[i], CUBLASLT_ALGO_CAP_SPLITK_SUPPORT)) continue;
    const uint32_t schemes = cap_value<uint32_t>(candidates[i], CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    const int32_t current = config_value<int32_t>(candidates[i], CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    for (int32_t split : {2, 4, 8, 16, 32}) {
      if (split == current || key.k / split < 64) continue;
      for (uint32_t scheme : {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                              CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE}) {
        if (!(schemes & scheme)) continue;
        cublasLtMatmulAlgo_t v = candidates[i];
        if (cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split)) !=
                CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme)) !=
                CUBLAS_STATUS_SUCCESS)
          continue;
        cublasLtMatmulHeuristicResult_t checked{};
        if (cublasLtMatmulAlgoCheck(h.lt, plan.op, plan.a, plan.b, plan.c_layout(), plan.c, &v, &checked) ==
                CUBLAS_STATUS_SUCCESS &&
            checked.workspaceSize <= key.workspace)
          candidates.push_back(v);
      }
    }
  }
}

// Device memory whose clearing evicts L2 before each timed trial: twice the L2's size, for as
// long as one autotune() runs (a shape's first run, outside graph capture). Null when the
// device reports no L2 or the memory is not there; trials then run with a warm L2.
class L2Flush {
 public:
  explicit L2Flush(int device) {
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess || l2 <= 0) return;
    bytes_ = 2 * size_t(l2);
    if (cudaMalloc(&buf_, bytes_) != cudaSuccess) buf_ = nullptr, bytes_ = 0;
    cudaGetLastError();
  }
  ~L2Flush() {
    if (buf_) cudaFree(buf_);
  }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  bool enqueue(cudaStream_t s) const { return !buf_ || cudaMemsetAsync(buf_, 0, bytes_, s) == cudaSuccess; }

 private:
  void* buf_ = nullptr;
  size_t bytes_ = 0;
};

// GPU time of `launch` in ms, the mean of kTrialRuns calls after one warm-up call, each call
// timed on its own after `flush` evicted L2; < 0 on failure.
template <class Launch>
float time_trials(const CudaHandles& h, const L2Flush& flush, cudaEvent_t (&start)[kTrialRuns],
                  cudaEvent_t (&stop)[kTrialRuns], Launch launch) {
  if (!launch()) return -1.f;
  if (launch_stream_hold(h.stream, kTrialHoldMicroseconds) != cudaSuccess) return -1.f;
  for (int r = 0; r < kTrialRuns; ++r) {
    if (!flush.enqueue(h.stream) || cudaEventRecord(start[r], h.stream) != cudaSuccess || !launch() ||
        cudaEventRecord(stop[r], h.stream) != cudaSuccess)
      return -1.f;
  }
  if (cudaEventSynchronize(stop[kTrialRuns - 1]) != cudaSuccess) return -1.f;
  float total = 0;
  for (int r = 0; r < kTrialRuns; ++r) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start[r], stop[r]) != cudaSuccess) return -1.f;
    total += ms;
  }
  return total / kTrialRuns;
}

// The heuristic's first choice is often not the fastest for the small-M products of batch-1
// inference: the first time a shape runs outside graph capture, its candidates are timed on the
// real operands and the fastest is kept. Each trial starts with L2 cleared, as a product meets
// its weights in a model's run (every other layer's weights pass through L2 in between), so a
// kernel that streams the weights through few SMs is not favoured by a warm L2. (On their own,
// cold trials changed no model's time beyond the ±5 us that alternating runs move by; they rank
// the split-K variants above.) Only where trials_allowed(); the caller's own run follows. Large
// products are tuned wide instead (wide_tune()).
void autotune(const CudaHandles& h, const GemmDesc& d, int device, Plan& plan, const void* a, const void* b,
              const void* cin, void* c, void* ws, size_t ws_bytes,
              const std::vector<cublasLtMatmulAlgo_t>& candidates) {
  if (candidates.size() < 2) return;
  cudaEvent_t start[kTrialRuns]{}, stop[kTrialRuns]{};
  bool events = true;
  for (int r = 0; r < kTrialRuns; ++r)
    events = events && cudaEventCreate(&start[r]) == cudaSuccess && cudaEventCreate(&stop[r]) == cudaSuccess;
  if (events) {
    const L2Flush flush(device);
    std::vector<std::pair<float, size_t>> timed;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const float ms = time_trials(h, flush, start, stop, [&] {
        return cublasLtMatmul(h.lt, plan.op, &d.alpha, b, plan.a, a, plan.b, &d.beta, cin, plan.c_layout(), c, plan.c,
                              &candidates[i], ws, ws_bytes, h.stream) == CUBLAS_STATUS_SUCCESS;
      });
      if (ms >= 0) timed.emplace_back(ms, i);
    }
    std::stable_sort(timed.begin(), timed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    if (!timed.empty()) plan.algo = candidates[timed[0].second];
    for (size_t r = 0; r < timed.size() && r < size_t(kGraphTuneCandidates); ++r)
      plan.ranked.push_back(candidates[timed[r].second]);
    cudaStreamSynchronize(h.stream);  // the flush buffer is freed below only when nothing uses it
  }
  for (int r = 0; r < kTrialRuns; ++r) {
    if (start[r]) cudaEventDestroy(start[r]);
    if (stop[r]) cudaEventDestroy(stop[r]);
  }
  cudaGetLastError();
}

// Products of at least kWideTuneMinFlop inside a WideTuneScope: the configurations of the
// heuristic's algorithms that it does not offer, screened on the real operands in two stages
// (lt_gemm_wide_tune.h), its own candidates among them; the fastest become the plan's ranking.
// False when the screen could not run (autotune() then ranks the heuristic's candidates).
bool wide_tune(const CudaHandles& h, const GemmDesc& d, Plan& plan, const void* a, const void* b, const void* cin,
               void* c, void* ws, size_t ws_bytes, const std::vector<cublasLtMatmulAlgo_t>& candidates) {
  std::vector<cublasLtMatmulAlgo_t> ranked = wide_ranking(
      LtProduct{h.lt, plan.op, plan.a, plan.b, plan.c_layout(), plan.c, ws_bytes}, candidates, h.stream,
      kGraphTuneCandidates, [&](const cublasLtMatmulAlgo_t& algo) {
        return cublasLtMatmul(h.lt, plan.op, &d.alpha, b, plan.a, a, plan.b, &d.beta, cin, plan.c_layout(), c, plan.c,
                              &algo, ws, ws_bytes, h.stream) == CUBLAS_STATUS_SUCCESS;
      });
  cudaGetLastError();
  if (ranked.empty()) return false;
  plan.algo = ranked[0];
  plan.ranked = std::move(ranked);
  return true;
}

// Candidates are timed on the caller's operands only when those runs cannot change what they
// read (C is not read, beta = 0, or is not the output, c_in) and the stream is not capturing.
bool trials_allowed(const CudaHandles& h, const GemmDesc& d, const void* cin, const void* c) {
  if (d.beta != 0.0f && cin == c) return false;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(h.stream, &capturing) == cudaSuccess && capturing == cudaStreamCaptureStatusNone;
}

}  // namespace

bool data_type_of(DType t, cudaDataType_t& out) {
  switch (t) {
    case DType::kFloat32: out = CUDA_R_32F; return true;
    case DType::kFloat16: out = CUDA_R_16F; return true;
    case DType::kBFloat16: out = CUDA_R_16BF; return true;
    default: return false;
  }
}

cudaDataType_t output_type_of(const PlanKey& key) {
  cudaDataType_t type = CUDA_R_32F;
  if (!key.float32_output) data_type_of(key.dtype, type);
  return type;
}

Status lt_gemm(const CudaHandles& handles, const GemmDesc& desc, const void* a, const void* b, void* c) {
  const GemmDesc& d = desc;
  if (d.m == 0 || d.n == 0 || d.batch == 0) return Status::ok();
  cudaDataType_t type{};
  if (!data_type_of(d.dtype, type)) return gemm_error(d, "unsupported dtype (float32, float16 or bfloat16 only)");
  if (d.m < 0 || d.n < 0 || d.k <= 0 || d.batch < 0 || d.batch > INT32_MAX)
    return gemm_error(d, "sizes must be positive (k > 0, batch < 2^31)");
  const int64_t cols_a = d.trans_a ? d.m : d.k, cols_b = d.trans_b ? d.k : d.n;
  PlanKey key{};
  key.m = d.m, key.n = d.n, key.k = d.k, key.batch = d.batch;
  key.lda = d.lda ? d.lda : cols_a;
  key.ldb = d.ldb ? d.ldb : cols_b;
  key.ldc = d.ldc ? d.ldc : d.n;
  const void* cin = d.c_in && d.beta != 0.0f ? d.c_in : c;
  key.ldc_in = cin != c && d.ldc_in ? d.ldc_in : key.ldc;
  if (key.lda < cols_a || key.ldb < cols_b || key.ldc < d.n || key.ldc_in < d.n)
    return gemm_error(d, "leading dimensions lda=" + std::to_string(key.lda) + " ldb=" + std::to_string(key.ldb) +
                             " ldc=" + std::to_string(key.ldc) + " ldc_in=" + std::to_string(key.ldc_in) +
                             " are smaller than the rows they hold");
  if (d.batch > 1 && d.stride_c == 0) return gemm_error(d, "a batched output needs a nonzero stride_c");
  // Strides only matter for batches; normalising them keeps one key per unbatched shape.
  key.stride_a = d.batch > 1 ? d.stride_a : 0;
  key.stride_b = d.batch > 1 ? d.stride_b : 0;
  key.stride_c = d.batch > 1 ? d.stride_c : 0;
  key.dtype = d.dtype;
  key.activation = d.activation;
  key.trans_a = d.trans_a, key.trans_b = d.trans_b;
  key.has_bias = d.bias != nullptr;
  key.tf32 = d.dtype == DType::kFloat32 && handles.allow_tf32;
  key.float32_output = d.float32_output && d.dtype != DType::kFloat32;
  // Products of ingot's own kernel where it takes them, when asked for (gemm_split_k.h).
  if (d.batch == 1 && !key.float32_output && !d.trans_a && !d.trans_b && d.alpha == 1.0f && split_k_product_enabled()) {
    SplitKProduct own;
    own.a = a, own.lda = key.lda, own.w = b, own.ldw = key.ldb, own.bias = d.bias;
    own.c = cin, own.ldc = key.ldc_in, own.d = c, own.ldd = key.ldc;
    own.rows = d.m, own.cols = d.n, own.depth = d.k, own.beta = d.beta, own.dtype = d.dtype;
    own.has_act = d.activation != GemmActivation::kNone;
    own.act = d.activation == GemmActivation::kRelu ? PointwiseActivation::kRelu : PointwiseActivation::kGeluTanh;
    if (const int split = split_k_plan(own, handles.sm_count); split > 0) {
      const cudaError_t e = launch_split_k_product(own, split, handles.stream);
      if (e != cudaSuccess) return gemm_error(d, std::string("split-K product launch: ") + cudaGetErrorString(e));
      return Status::ok();
    }
  }
  const size_t elem = dtype_size(d.dtype), out_elem = key.float32_output ? sizeof(float) : elem;
  key.align_a = alignment_of(a, d.batch, key.stride_a, elem);
  key.align_b = alignment_of(b, d.batch, key.stride_b, elem);
  key.align_c =
      std::min(alignment_of(c, d.batch, key.stride_c, out_elem), alignment_of(cin, d.batch, key.stride_c, out_elem));
  key.align_bias = d.bias ? alignment_of(d.bias, 1, 0, out_elem) : 0;

  // The workspace cuBLASLt sees: 256-byte aligned, at most kGemmWorkspaceBytes (a fixed cap
  // keeps the key, and so the algorithm, the same whatever scratch a context has).
  void* const workspace = handles.gemm_workspace;
  uintptr_t ws = reinterpret_cast<uintptr_t>(workspace);
  uintptr_t ws_aligned = (ws + kWorkspaceAlignment - 1) & ~(kWorkspaceAlignment - 1);
  size_t ws_bytes = workspace && handles.gemm_workspace_bytes > ws_aligned - ws
                        ? handles.gemm_workspace_bytes - (ws_aligned - ws)
                        : 0;
  if (ws_bytes > kGemmWorkspaceBytes) ws_bytes = kGemmWorkspaceBytes;
  key.workspace = ws_bytes;
  INGOT_CUDA_RETURN_IF_ERROR(cudaGetDevice(&key.device));

  Plan* plan = nullptr;
  {
    PlanCache& cache = plan_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.plans.find(key);
    if (it == cache.plans.end()) {
      auto fresh = std::make_unique<Plan>();
      std::vector<cublasLtMatmulAlgo_t> candidates;
      INGOT_RETURN_IF_ERROR(make_plan(handles, d, key, d.bias, *fresh, candidates));
      if (key.m <= kSplitKMaxRows && key.batch == 1)
        add_split_k_variants(handles, key, *fresh, candidates);
      fresh->product = product_text(key);
      void* const ws_ptr = ws_bytes ? reinterpret_cast<void*>(ws_aligned) : nullptr;
      const bool wide = current_wide_scope() && key.batch == 1 &&
                        2.0 * double(d.m) * double(d.n) * double(d.k) >= kWideTuneMinFlop && wide_tuning_enabled();
      if (given_tactic(handles, key, *fresh)) {
        fresh->has_tactic = true;
      } else if (trials_allowed(handles, d, cin, c)) {
        if (wide && wide_tune(handles, d, *fresh, a, b, cin, c, ws_ptr, ws_bytes, candidates)) fresh->has_tactic = true;
        else autotune(handles, d, key.device, *fresh, a, b, cin, c, ws_ptr, ws_bytes, candidates);
      }
      fresh->m = d.m, fresh->n = d.n, fresh->k = d.k;
      it = cache.plans.emplace(key, std::move(fresh)).first;
    }
    plan = it->second.get();
  }
  if (WideTuneScope* scope = current_wide_scope(); scope && plan->has_tactic) scope->record(plan);

  void* ws_ptr = ws_bytes ? reinterpret_cast<void*>(ws_aligned) : nullptr;
  auto run = [&] {
    record_gemm_capture_begin(handles.stream);
    const cublasStatus_t st = cublasLtMatmul(handles.lt, plan->op, &d.alpha, b, plan->a, a, plan->b, &d.beta, cin,
                                             plan->c_layout(), c, plan->c, &plan->algo, ws_ptr, ws_bytes, handles.stream);
    record_gemm_capture_end(handles.stream);
    return check(st, d, "cublasLtMatmul");
  };
  std::lock_guard<std::mutex> lock(plan->mutex);
  if (recorded_plans && plan->ranked.size() > 1 && !plan->graph_tuned &&
      std::find(recorded_plans->begin(), recorded_plans->end(), plan) == recorded_plans->end())
    recorded_plans->push_back(plan);
  if (!d.bias) return run();
  INGOT_RETURN_IF_ERROR(check(
      cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &d.bias, sizeof(d.bias)), d,
      "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"));
  return run();
}

GemmTuneRecorder::GemmTuneRecorder() : saved_(recorded_plans) { recorded_plans = &plans_; }
GemmTuneRecorder::~GemmTuneRecorder() { recorded_plans = saved_; }

int gemm_choices(const GemmPlan* p) {
  std::lock_guard<std::mutex> lock(p->mutex);
  return p->graph_tuned ? 1 : int(p->ranked.size());
}

void set_gemm_choice(GemmPlan* p, int i) {
  std::lock_guard<std::mutex> lock(p->mutex);
  if (i < 0 || size_t(i) >= p->ranked.size()) return;
  p->chosen = i;
  p->algo = p->ranked[size_t(i)];
}

int gemm_choice(const GemmPlan* p) {
  std::lock_guard<std::mutex> lock(p->mutex);
  return p->chosen;
}

void finish_gemm_choice(GemmPlan* p) {
  std::lock_guard<std::mutex> lock(p->mutex);
  p->graph_tuned = true;
}

std::string gemm_plan_name(const GemmPlan* p) {
  return "m=" + std::to_string(p->m) + " n=" + std::to_string(p->n) + " k=" + std::to_string(p->k);
}

bool graph_tuning_enabled() {
  const char* e = std::getenv("INGOT_CUDA_GRAPH_TUNE");
  return !(e && std::strcmp(e, "0") == 0);
}

}  // namespace ingot::cuda
