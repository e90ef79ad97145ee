// Reading a cuBLASLt algorithm's configuration and capabilities, for lt_gemm (its split-K
// variants), its wide tuning and its tactics, and bench/lt_sweep; and a configuration as nine
// integers (what an engine file keeps) and back. Header-only: it needs nothing but cuBLASLt. A
// value cuBLASLt does not report reads as T's zero (an empty list).
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ingot::cuda {

template <class T>
T config_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
  return v;
}

template <class T>
T cap_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written);
  return v;
}

template <class T>
std::vector<T> cap_array(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {};
  std::vector<T> v(bytes / sizeof(T));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), v.size() * sizeof(T), &bytes) != CUBLAS_STATUS_SUCCESS)
    return {};
  return v;
}

// A configuration as lt_gemm.h's GemmTactic keeps it, attribute by attribute in this order.
using AlgoConfig = std::array<int64_t, 9>;
inline constexpr cublasLtMatmulAlgoConfigAttributes_t kConfigAttributes[9] = {
    CUBLASLT_ALGO_CONFIG_ID,           CUBLASLT_ALGO_CONFIG_TILE_ID,         CUBLASLT_ALGO_CONFIG_STAGES_ID,
    CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
    CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,     CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME};

// Each attribute's width in cuBLASLt's API (it checks the size given): the algorithm id and K
// split are int32, the inner and cluster shapes uint16, the others uint32.
inline size_t config_attribute_bytes(cublasLtMatmulAlgoConfigAttributes_t attr) {
  return attr == CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID || attr == CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID ? 2 : 4;
}

inline AlgoConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig out{};
  for (size_t i = 0; i < out.size(); ++i) {
    const cublasLtMatmulAlgoConfigAttributes_t attr = kConfigAttributes[i];
    out[i] = config_attribute_bytes(attr) == 2 ? int64_t(config_value<uint16_t>(algo, attr))
             : attr == CUBLASLT_ALGO_CONFIG_ID || attr == CUBLASLT_ALGO_CONFIG_SPLITK_NUM
                 ? int64_t(config_value<int32_t>(algo, attr))
                 : int64_t(config_value<uint32_t>(algo, attr));
  }
  return out;
}

// `algo` initialised for algorithm config[0] of these types and given the other eight attributes;
// false when cuBLASLt refuses one (whether it runs the product is cublasLtMatmulAlgoCheck's call).
inline bool algo_from_config(cublasLtHandle_t lt, cublasComputeType_t compute, cudaDataType_t type,
                             cudaDataType_t out_type, const AlgoConfig& config, cublasLtMatmulAlgo_t& algo) {
  if (cublasLtMatmulAlgoInit(lt, compute, CUDA_R_32F, type, type, out_type, out_type, int(config[0]), &algo) !=
      CUBLAS_STATUS_SUCCESS)
    return false;
  for (size_t i = 1; i < config.size(); ++i) {
    const size_t bytes = config_attribute_bytes(kConfigAttributes[i]);
    const uint16_t v16 = uint16_t(config[i]);
    const uint32_t v32 = uint32_t(config[i]);  // int32 attributes: the same bits
    if (cublasLtMatmulAlgoConfigSetAttribute(&algo, kConfigAttributes[i], bytes == 2 ? static_cast<const void*>(&v16) : &v32,
                                             bytes) != CUBLAS_STATUS_SUCCESS)
      return false;
  }
  return true;
}

// The cluster shapes configurations are tried with: cuBLASLt's choice, then 1 to 4 CTAs.
inline constexpr uint16_t kClusterShapes[] = {CUBLASLT_CLUSTER_SHAPE_AUTO,  CUBLASLT_CLUSTER_SHAPE_1x1x1,
                                              CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
                                              CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1,
                                              CUBLASLT_CLUSTER_SHAPE_1x4x1};

}  // namespace ingot::cuda
