// Where precision "bf16" matrix products (ingot.FusedMatMul, ingot.Attention's projections) run
// on this CPU. In bfloat16 only where bf16 arithmetic is faster than float32:
//   - AMX: oneDNN runs its bf16 matmul on the tile units (2-3x its float32 rate on 2 threads of a
//     Sapphire Rapids VM);
//   - AMD Zen 4 and later (AVX512-BF16): vdpbf16ps issues at the FMA rate and does twice the
//     multiplies, and oneDNN 2.6's bf16 matmul measured 2x its float32 one (420-460 against
//     200-230 GFLOP/s on 2 threads of an EPYC VM, bench/matmul_bench.cc).
// On an Intel CPU with AVX512-BF16 but no AMX, one vdpbf16ps a cycle does no more multiplies than
// float32's two FMA ports, and the bf16 matmul measured 140-150 GFLOP/s against 270-300 for
// float32 (the same Xeon, model 207, in a VM that hides AMX; DistilBERT b1 s128 62.6 against
// 40.2 ms): there the products compute in float32: many-row products on the engine's float32
// weights, which is faster and more exact; few-row products (at most kFewRowsMax rows, which
// stream their weights from memory) on a bf16 copy widened to float32 as it is read
// (gemm_few_rows_w16): half the bytes (DistilBERT b1 s12: 6.6 against 11.3 ms for the fp32
// engine). The engine file does not change; the choice is made where it runs.
#pragma once

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "backends/cpu/fused_matmul_util.h"

namespace ingot::cpu {

// The implementation oneDNN picks for a typical bf16 product ("" where it has none).
inline std::string onednn_bf16_matmul_impl() {
  try {
    fused_matmul::Spec s;
    s.K = 768, s.N = 768, s.bf16 = true;
    return fused_matmul::make_pd(s, fused_matmul::kRepresentativeM, fused_matmul::tag::any).impl_info_str();
  } catch (const dnnl::error&) {
    return "";
  }
}

inline bool cpu_vendor_is_amd() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  char v[13];
  std::memcpy(v, &b, 4), std::memcpy(v + 4, &d, 4), std::memcpy(v + 8, &c, 4), v[12] = 0;
  return std::strcmp(v, "AuthenticAMD") == 0;
}

// Whether bf16 products beat float32 ones here (the rule at the top of this file), given the
// implementation oneDNN picks for them.
inline bool bf16_arithmetic_is_faster(const std::string& impl) {
  if (impl.find("amx") != std::string::npos) return true;
  return impl.find("avx512_core_bf16") != std::string::npos && cpu_vendor_is_amd();
}

// INGOT_CPU_BF16_PRODUCTS=on|off: the choice forced (tests of either path), or none. "on" needs
// oneDNN's bf16 matmul, which needs AVX-512: on a CPU with AVX2 alone the products stay float32.
inline std::optional<bool> bf16_products_override() {
  const char* e = std::getenv("INGOT_CPU_BF16_PRODUCTS");
  if (e && std::string(e) == "on") return true;
  if (e && std::string(e) == "off") return false;
  return std::nullopt;
}

inline bool bf16_products_pay() {
  static const std::string impl = onednn_bf16_matmul_impl();
  if (auto forced = bf16_products_override()) return *forced && !impl.empty();
  static const bool faster = bf16_arithmetic_is_faster(impl);
  return faster;
}

}  // namespace ingot::cpu
