// Build-time tuning of CUDA engines (DeviceExecutor::tune) and what an engine file keeps of it:
//
//   "device_tuning": {"cuda_gemm": [{"product": "m=4096 n=2304 k=768 ...", "config": [9 integers]}, ...]}
//
// one entry per large matrix product tuned wide (lt_gemm.h's GemmTactic: the product as text and
// cuBLASLt's configuration of it).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cuda/lt_gemm.h"
#include "ingot/status.h"

namespace ingot::cuda {

// `tactics` merged into `previous` (null or an earlier result): a product already there takes
// the new configuration.
nlohmann::json tuning_json(const std::vector<GemmTactic>& tactics, const nlohmann::json& previous);

// The tactics of a "device_tuning" value; an error names what is malformed.
Expected<std::vector<GemmTactic>> tactics_from_json(const nlohmann::json& tuning);

}  // namespace ingot::cuda
