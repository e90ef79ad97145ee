// lt_gemm's internals shared by its files (lt_gemm.cc: plans and their tuning; lt_gemm_tactics.cc:
// the configurations an engine file keeps): what identifies a product, and its cached plan.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/lt_gemm.h"

namespace ingot::cuda {

// Everything that decides a product's descriptors and algorithm: one plan per key.
struct PlanKey {
  int64_t m, n, k, batch, stride_a, stride_b, stride_c, lda, ldb, ldc, ldc_in;
  uint64_t workspace;
  int32_t device;
  uint32_t align_a, align_b, align_c, align_bias;
  DType dtype;
  GemmActivation activation;
  bool trans_a, trans_b, has_bias, tf32, float32_output;
  bool operator==(const PlanKey&) const = default;
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    };
    for (int64_t v : {key.m, key.n, key.k, key.batch, key.stride_a, key.stride_b, key.stride_c, key.lda, key.ldb,
                      key.ldc, key.ldc_in})
      mix(uint64_t(v));
    mix(key.workspace);
    mix(uint64_t(key.device) << 32 | uint64_t(key.dtype) << 8 | uint64_t(key.activation));
    mix(uint64_t(key.align_a) | uint64_t(key.align_b) << 16 | uint64_t(key.align_c) << 32 |
        uint64_t(key.align_bias) << 48);
    mix(uint64_t(key.trans_a) | uint64_t(key.trans_b) << 1 | uint64_t(key.has_bias) << 2 | uint64_t(key.tf32) << 3 |
        uint64_t(key.float32_output) << 4);
    return size_t(h);
  }
};

// One cached configuration. Everything but the bias pointer and the algorithm is fixed at
// creation; the bias pointer is an attribute of `op`, so calls set it and run under `mutex`
// (two contexts may run the same shape on different streams at once), and the algorithm may be
// changed by graph tuning (set_gemm_choice) under the same mutex.
struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A (our B), B (our A), D
  cublasLtMatrixLayout_t c_in = nullptr;  // C when its leading dimension differs from D's, else null
  cublasLtMatrixLayout_t c_layout() const { return c_in ? c_in : c; }
  cublasLtMatmulAlgo_t algo{};
  mutable std::mutex mutex;
  std::vector<cublasLtMatmulAlgo_t> ranked;  // the fastest trials first (at most kGraphTuneCandidates)
  int chosen = 0;                            // index into ranked of `algo`
  bool graph_tuned = false;                  // decided inside a captured graph already
  bool has_tactic = false;                   // tuned wide, or its configuration given (GemmTactic)
  std::string product;                       // the key as GemmTactic::product spells it
  int64_t m = 0, n = 0, k = 0;

  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan() {
    if (c_in) cublasLtMatrixLayoutDestroy(c_in);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// cuBLASLt's type for a float dtype; false for others.
bool data_type_of(DType t, cudaDataType_t& out);

// cuBLASLt's type of a key's C and D: its dtype's, or float32.
cudaDataType_t output_type_of(const PlanKey& key);

// The key as GemmTactic::product spells it.
std::string product_text(const PlanKey& key);

// The configuration add_gemm_tactics gave for the plan's product (plan.product), set as
// plan.algo when there is one and cuBLASLt accepts it (another cuBLASLt may not know it: the
// product is then tuned as any other).
bool given_tactic(const CudaHandles& h, const PlanKey& key, GemmPlan& plan);

// The innermost WideTuneScope of this thread, or null.
WideTuneScope* current_wide_scope();

}  // namespace ingot::cuda
