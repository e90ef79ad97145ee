// oneDNN descriptors of ingot.FusedMatMul (Y[M, N] = act(A[M, K] x W[K, N] + bias)), shared by
// the kernel and bench/matmul_bench.cc so the benchmark times exactly the primitive the kernel
// builds. Throws dnnl::error: callers are inside dnnl_util::guard.
#pragma once

#include <string>

#include "backends/cpu/dnnl_util.h"

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

// The primitive for M rows. `weights_tag` any: oneDNN picks its preferred (blocked) layout,
// which the caller reads from pd.weights_desc() and packs the weights into; ab: plain rows.
inline dnnl::matmul::primitive_desc make_pd(const Spec& s, int64_t M, tag weights_tag) {
  dnnl::memory::desc src({M, s.K}, s.compute_type(), tag::ab);
  dnnl::memory::desc wei({s.K, s.N}, s.compute_type(), weights_tag);
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
