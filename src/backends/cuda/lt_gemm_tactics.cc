// The product configurations an engine file keeps (lt_gemm.h's GemmTactic): the product as text,
// cuBLASLt's configuration as nine integers and back, the table add_gemm_tactics fills, and the
// scope that collects what build-time tuning chose.
#include <algorithm>
#include <unordered_map>

#include "backends/cuda/lt_algo_attributes.h"
#include "backends/cuda/lt_gemm_plan.h"

namespace ingot::cuda {
namespace {

thread_local WideTuneScope* wide_scope = nullptr;  // the innermost of this thread

// The tactics given by add_gemm_tactics, by product.
struct TacticTable {
  std::mutex mutex;
  std::unordered_map<std::string, AlgoConfig> configs;
};

TacticTable& tactic_table() {
  static TacticTable* table = new TacticTable;  // never destroyed, like the plans
  return *table;
}

const char* activation_name(GemmActivation a) {
  switch (a) {
    case GemmActivation::kNone: return "none";
    case GemmActivation::kRelu: return "relu";
    case GemmActivation::kGeluTanh: return "gelu_tanh";
  }
  return "?";
}

// The configuration `config` of the plan's product, when cuBLASLt accepts it within the workspace.
bool algo_of(const CudaHandles& h, const PlanKey& key, const GemmPlan& plan, const AlgoConfig& config,
             cublasLtMatmulAlgo_t& algo) {
  cudaDataType_t type{};
  data_type_of(key.dtype, type);
  const cublasComputeType_t compute = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (!algo_from_config(h.lt, compute, type, output_type_of(key), config, algo)) return false;
  cublasLtMatmulHeuristicResult_t checked{};
  return cublasLtMatmulAlgoCheck(h.lt, plan.op, plan.a, plan.b, plan.c_layout(), plan.c, &algo, &checked) ==
             CUBLAS_STATUS_SUCCESS &&
         checked.workspaceSize <= key.workspace;
}

}  // namespace

std::string product_text(const PlanKey& key) {
  auto list = [](std::initializer_list<int64_t> v) {
    std::string s;
    for (int64_t x : v) {
      if (!s.empty()) s += ',';
      s += std::to_string(x);
    }
    return s;
  };
  return "m=" + std::to_string(key.m) + " n=" + std::to_string(key.n) + " k=" + std::to_string(key.k) +
         " batch=" + std::to_string(key.batch) + " strides=" + list({key.stride_a, key.stride_b, key.stride_c}) +
         " ld=" + list({key.lda, key.ldb, key.ldc, key.ldc_in}) + " trans=" + list({key.trans_a, key.trans_b}) +
         " dtype=" + dtype_name(key.dtype) + (key.tf32 ? "/tf32" : "") + (key.float32_output ? "->float32" : "") +
         " bias=" + (key.has_bias ? "1" : "0") +
         " act=" + activation_name(key.activation) +
         " align=" + list({key.align_a, key.align_b, key.align_c, key.align_bias}) +
         " workspace=" + std::to_string(key.workspace);
}

bool given_tactic(const CudaHandles& h, const PlanKey& key, GemmPlan& plan) {
  AlgoConfig config{};
  {
    TacticTable& table = tactic_table();
    std::lock_guard<std::mutex> lock(table.mutex);
    auto it = table.configs.find(plan.product);
    if (it == table.configs.end()) return false;
    config = it->second;
  }
  cublasLtMatmulAlgo_t algo;
  if (!algo_of(h, key, plan, config, algo)) return false;
  plan.algo = algo;
  return true;
}

WideTuneScope* current_wide_scope() { return wide_scope; }

WideTuneScope::WideTuneScope() : saved_(wide_scope) { wide_scope = this; }
WideTuneScope::~WideTuneScope() { wide_scope = saved_; }

void WideTuneScope::record(GemmPlan* plan) {
  if (std::find(plans_.begin(), plans_.end(), plan) == plans_.end()) plans_.push_back(plan);
}

std::vector<GemmTactic> WideTuneScope::tactics() const {
  std::vector<GemmTactic> out;
  for (GemmPlan* p : plans_) {
    std::lock_guard<std::mutex> lock(p->mutex);
    out.push_back(GemmTactic{p->product, config_of(p->algo)});
  }
  return out;
}

void add_gemm_tactics(const std::vector<GemmTactic>& tactics) {
  TacticTable& table = tactic_table();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (const GemmTactic& t : tactics) table.configs[t.product] = t.config;
}

}  // namespace ingot::cuda
