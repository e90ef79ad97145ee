// product_layer_norm (product_norm.h): the fused kernel where it fits, else cuBLASLt and the
// LayerNorm kernel.
#include "backends/cuda/product_norm.h"

#include <cstdint>
#include <string>

#include "backends/cuda/norm_impl.h"
#include "backends/cuda/product_norm_impl.h"

namespace ingot::cuda {

Status layer_norm_in_place(const CudaHandles& h, DType dtype, void* y, int64_t rows, int64_t n,
                           const LayerNormArgs& norm, const char* what) {
  RowNormLaunch a;
  a.dtype = a.param_dtype = dtype;
  a.x = y, a.y = y;
  a.gamma = norm.gamma, a.beta = norm.beta, a.params_constant = norm.params_constant;
  a.rows = a.x_period = rows, a.d = n;
  a.epsilon = norm.epsilon;
  a.sm_count = h.sm_count;
  a.prefetch = norm.prefetch;
  return cuda_status(launch_row_norm(a, h.stream), what);
}

Status product_layer_norm(const CudaHandles& h, const GemmDesc& d, const void* a, const void* w, void* y,
                          const LayerNormArgs& norm, const char* what) {
  const bool plain = d.batch == 1 && !d.trans_a && !d.trans_b && d.activation == GemmActivation::kNone &&
                     d.alpha == 1.f && (d.lda == 0 || d.lda == d.k) && (d.ldb == 0 || d.ldb == d.n) &&
                     (d.ldc == 0 || d.ldc == d.n) && (!d.c_in || d.beta == 1.f) && (d.ldc_in == 0 || d.ldc_in == d.n);
  if (!plain) return internal_error(std::string(what) + ": a LayerNorm after a batched, strided or scaled product");
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const void* residual = d.beta == 1.f ? d.c_in : nullptr;
  const size_t exchange = product_norm_exchange_bytes(d.m, d.n);
  if (aligned(a) && aligned(w) && aligned(y) && aligned(residual) && aligned(d.bias) &&
      aligned(norm.gamma) && aligned(norm.beta) && h.grid_scratch && exchange <= h.grid_scratch_bytes &&
      size_t((d.m + kProductNormTileRows - 1) / kProductNormTileRows) <= kGridCounterWords &&
      product_norm_fits(d.dtype, d.m, d.n, d.k, h.sm_count, h.cc_major, h.cc_minor)) {
    ProductNormLaunch p;
    p.dtype = d.dtype, p.a = a, p.w = w, p.bias = d.bias, p.residual = residual;
    p.gamma = norm.gamma, p.beta = norm.beta, p.y = y;
    p.M = d.m, p.N = d.n, p.K = d.k, p.epsilon = norm.epsilon, p.params_constant = norm.params_constant;
    p.exchange = h.grid_scratch, p.counters = h.grid_counter, p.sm_count = h.sm_count;
    p.prefetch = norm.prefetch;
    return cuda_status(launch_product_norm(p, h.stream), what);
  }
  INGOT_RETURN_IF_ERROR(lt_gemm(h, d, a, w, y));
  return layer_norm_in_place(h, d.dtype, y, d.m, d.n, norm, what);
}

}  // namespace ingot::cuda
