// Where precision "bf16" matrix products (ingot.FusedMatMul, ingot.Attention's projections) run
// on this CPU. In bfloat16 only where that pays: oneDNN runs its bf16 matmul on the AMX tile
// units (2-3x its float32 rate on 2 threads of a Sapphire Rapids VM). On a CPU with
// AVX512-BF16 but no AMX, one vdpbf16ps a cycle does no more multiplies than float32's two FMA
// ports, and oneDNN 2.6's bf16 matmul measured 140-150 GFLOP/s against 270-300 for float32 (the
// same Xeon, model 207, in a VM that hides AMX; DistilBERT b1 s128 62.6 against 40.2 ms): there
// the products compute in float32: many-row products on the engine's float32 weights, which is
// faster and more exact; few-row products (at most kFewRowsMax rows, which stream their weights
// from memory) on a bf16 copy widened to float32 as it is read (gemm_few_rows_w16): half the
// bytes (DistilBERT b1 s12: 6.6 against 11.3 ms for the fp32 engine). The engine file does
// not change; the choice is made where it runs.
#pragma once

#include <cstdlib>
#include <string>

#include "backends/cpu/fused_matmul_util.h"

namespace ingot::cpu {

// Whether oneDNN would run a typical bf16 product on AMX.
inline bool onednn_bf16_matmul_on_amx() {
  try {
    fused_matmul::Spec s;
    s.K = 768, s.N = 768, s.bf16 = true;
    auto pd = fused_matmul::make_pd(s, fused_matmul::kRepresentativeM, fused_matmul::tag::any);
    return std::string(pd.impl_info_str()).find("amx") != std::string::npos;
  } catch (const dnnl::error&) {
    return false;  // no bf16 matmul here at all
  }
}

// INGOT_CPU_BF16_PRODUCTS=on|off overrides the choice (tests of either path on any CPU).
inline bool bf16_products_pay() {
  if (const char* e = std::getenv("INGOT_CPU_BF16_PRODUCTS")) {
    if (std::string(e) == "on") return true;
    if (std::string(e) == "off") return false;
  }
  static const bool amx = onednn_bf16_matmul_on_amx();
  return amx;
}

}  // namespace ingot::cpu
