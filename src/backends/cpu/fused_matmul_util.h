// oneDNN descriptors of ingot.FusedMatMul (Y[M, N] = act(A[M, K] x W[K, N] + bias)), shared by
// the kernel and bench/matmul_bench.cc so the benchmark times exactly the primitive the kernel
// builds. Throws dnnl::error: callers are inside dnnl_util::guard.
#pragma once

#include <string>

#include "backends/cpu/dnnl_util.h"

namespace ingot::cpu {
bool panel16_supported();  // gemm_few_rows.h
}  // namespace ingot::cpu

namespace ingot::fused_matmul {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

enum class Activation { kNone, kRelu, kGelu, kGeluTanh };

// "" | "Relu" | "Gelu" | "GeluTanh"; false for anything else.
inline bool parse_activation(const std::string& s, Activation& a) {
  if (s.empty()) a = Activation::kNone;
  else if (s == "Relu") a = Activation::kRelu;
  else if (s == "Gelu") a = Activation::kGelu;
  else if (s == "GeluTanh") a = Activation::kGeluTanh;
  else return false;
  return true;
}

struct Spec {
  int64_t K = 0, N = 0;
  bool bf16 = false;  // bf16 source and weights, f32 accumulation and output
  bool bias = false;
  Activation act = Activation::kNone;

  dt compute_type() const { return bf16 ? dt::bf16 : dt::f32; }
};

// Rows of the primitive whose preferred weights layout constant weights are packed in: a
// typical B x S of transformer inference.
constexpr int64_t kRepresentativeM = 128;

// The primitive for M rows with weights in layout `wei`.
inline dnnl::matmul::primitive_desc make_pd(const Spec& s, int64_t M, const dnnl::memory::desc& wei) {
  dnnl::memory::desc src({M, s.K}, s.compute_type(), tag::ab);
  dnnl::memory::desc dst({M, s.N}, dt::f32, tag::ab);
  dnnl::primitive_attr attr = dnnl_util::user_scratchpad_attr();
  if (s.act != Activation::kNone) {
    dnnl::algorithm alg = s.act == Activation::kRelu   ? dnnl::algorithm::eltwise_relu
                          : s.act == Activation::kGelu ? dnnl::algorithm::eltwise_gelu_erf
                                                       : dnnl::algorithm::eltwise_gelu_tanh;
    dnnl::post_ops po;
    po.append_eltwise(1.f, alg, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  auto& eng = dnnl_util::cpu_engine();
  if (s.bias) {
    dnnl::memory::desc bias({1, s.N}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, bias, dst), attr, eng);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), attr, eng);
}

// The primitive for M rows. `weights_tag` any: oneDNN picks its preferred (blocked) layout,
// which the caller reads from pd.weights_desc() and packs the weights into; ab: plain rows.
inline dnnl::matmul::primitive_desc make_pd(const Spec& s, int64_t M, tag weights_tag) {
  return make_pd(s, M, dnnl::memory::desc({s.K, s.N}, s.compute_type(), weights_tag));
}

// Float32 weights as panels of 32 columns (oneDNN's BA16a32b: each panel Kp rows of 32 floats,
// Kp = K rounded up to 16, zero padding): the layout gemm_few_rows reads.
inline dnnl::memory::desc panel_layout(int64_t K, int64_t N) { return {{K, N}, dt::f32, tag::BA16a32b}; }

// Float32 weights as panels of 16 columns (oneDNN's BA16a16b: each panel Kp rows of 16 floats,
// Kp = K rounded up to 16, zero padding): the layout gemm_panel16 reads, for every M, on CPUs
// with AVX2 and no AVX-512 (where oneDNN's matmul reads no blocked layout).
inline dnnl::memory::desc panel16_layout(int64_t K, int64_t N) { return {{K, N}, dt::f32, tag::BA16a16b}; }

// bf16 weights in oneDNN's AMX layout (BA16a64b2a: panels of 64 columns, each Kp/2 rows of 64
// column pairs of consecutive k, Kp = K rounded up to 32), what its AMX matmul prefers; the
// layout gemm_few_rows_bf16 reads.
inline dnnl::memory::desc bf16_panel_layout(int64_t K, int64_t N) { return {{K, N}, dt::bf16, tag::BA16a64b2a}; }

// bf16 weights as panel_layout's 32-column panels (Kp rows of 32 bfloat16): what
// gemm_few_rows_w16 reads where bf16 products do not pay (no AMX, bf16_products.h): few-row
// products stream half panel_layout's bytes and compute in float32.
inline dnnl::memory::desc bf16_narrow_panel_layout(int64_t K, int64_t N) { return {{K, N}, dt::bf16, tag::BA16a32b}; }

// The layout constant weights are packed in, once, for every M. Float32 with AVX2 and no
// AVX-512: panel16_layout, which gemm_panel16 reads for every M. Else float32: panel_layout when
// oneDNN's brgemm matmul reads it, so one packed copy serves oneDNN (M > kFewRowsMax) and
// gemm_few_rows. oneDNN's own choice on AVX-512 is 64-column panels, 5–7 % faster for its
// products at M = 128 in DistilBERT (its FFN products, alternating runs) but read by
// gemm_few_rows at only 0.92–0.97× oneDNN's speed against 0.71–0.75× for 32-column panels at
// M = 12. Else, and for bf16, what oneDNN prefers at M rows.
inline dnnl::memory::desc constant_weights_layout(const Spec& s, int64_t M) {
  if (!s.bf16 && cpu::panel16_supported()) return panel16_layout(s.K, s.N);
  if (!s.bf16) {
    try {
      auto pd = make_pd(s, M, panel_layout(s.K, s.N));
      if (std::string(pd.impl_info_str()).rfind("brg", 0) == 0) return pd.weights_desc();
    } catch (const dnnl::error&) {
      // oneDNN has no implementation for that layout here: use its own.
    }
  }
  return make_pd(s, M, tag::any).weights_desc();
}

// Reorders row-major f32 weights [K, N] into `layout` (converting to bf16 when it says so).
inline dnnl::memory pack_weights(const float* w, int64_t K, int64_t N, const dnnl::memory::desc& layout) {
  auto& eng = dnnl_util::cpu_engine();
  dnnl::memory plain({{K, N}, dt::f32, tag::ab}, eng, const_cast<float*>(w));
  dnnl::memory packed(layout, eng);
  dnnl::stream st(eng);
  dnnl::reorder(plain, packed).execute(st, plain, packed);
  st.wait();
  return packed;
}

// The implementation oneDNN chose ("brg:avx512_core_amx", "gemm:jit", ...), for diagnostics.
inline std::string impl_name(const dnnl::matmul::primitive_desc& pd) { return pd.impl_info_str(); }

}  // namespace ingot::fused_matmul
