// product_layer_norm (product_norm.h): the fused kernel where it fits, else cuBLASLt and the
// LayerNorm kernel, with the product split over K where it is deep and has few rows.
#include "backends/cuda/product_norm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "backends/cuda/norm_impl.h"
#include "backends/cuda/product_norm_impl.h"

namespace ingot::cuda {

namespace {

// Rows up to which a deep product is split (batch 1-4 of 128 tokens): more rows give cuBLASLt's
// own tiles enough CTAs.
constexpr int64_t kSplitMaxRows = 512;

// INGOT_CUDA_NORM_SPLIT: -1 when unset (the default rule), else the parts asked for.
int split_override() {
  static const int parts = [] {
    const char* e = std::getenv("INGOT_CUDA_NORM_SPLIT");
    return e && *e ? std::clamp(std::atoi(e), 0, kMaxRowNormParts) : -1;
  }();
  return parts;
}

// The LayerNorm launch into y [rows, n] with norm's parameters; its input is the caller's to set.
RowNormLaunch norm_launch(const CudaHandles& h, DType dtype, void* y, int64_t rows, int64_t n,
                          const LayerNormArgs& norm) {
  RowNormLaunch a;
  a.dtype = a.param_dtype = dtype;
  a.y = y;
  a.gamma = norm.gamma, a.beta = norm.beta, a.params_constant = norm.params_constant;
  a.rows = a.x_period = rows, a.d = n;
  a.epsilon = norm.epsilon;
  a.sm_count = h.sm_count;
  a.prefetch = norm.prefetch;
  return a;
}

}  // namespace

int product_norm_split(DType dtype, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || m > kSplitMaxRows || !row_norm_takes_partials(dtype, n)) return 0;
  // Parts of K = N each (FFN 2: four of 768), at most four, unless asked for otherwise.
  const int asked = split_override();
  const int parts = asked >= 0 ? asked : int(std::min<int64_t>(4, k / n));
  // Whole 64-deep steps a part, so that every slice of A and W starts 128-byte aligned.
  if (parts < 2 || k % (int64_t(parts) * 64) != 0) return 0;
  return parts;
}

size_t product_norm_split_bytes(DType dtype, int64_t m, int64_t n, int64_t k) {
  return size_t(product_norm_split(dtype, m, n, k)) * size_t(m) * size_t(n) * sizeof(float);
}

Status layer_norm_in_place(const CudaHandles& h, DType dtype, void* y, int64_t rows, int64_t n,
                           const LayerNormArgs& norm, const char* what) {
  RowNormLaunch a = norm_launch(h, dtype, y, rows, n, norm);
  a.x = y;
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
  if (const int parts = product_norm_split(d.dtype, d.m, d.n, d.k);
      parts > 0 && norm.scratch && norm.scratch_bytes >= product_norm_split_bytes(d.dtype, d.m, d.n, d.k) &&
      reinterpret_cast<uintptr_t>(norm.scratch) % 256 == 0) {
    GemmDesc p;
    p.m = d.m, p.n = d.n, p.k = d.k / parts;
    p.batch = parts;
    p.lda = d.k, p.stride_a = p.k;             // part s: columns [s·k, (s+1)·k) of A
    p.ldb = d.n, p.stride_b = p.k * d.n;       // and those rows of W
    p.ldc = d.n, p.stride_c = d.m * d.n;       // into its own float32 [m, n]
    p.dtype = d.dtype;
    p.float32_output = true;
    float* partials = static_cast<float*>(norm.scratch);
    INGOT_RETURN_IF_ERROR(lt_gemm(h, p, a, w, partials));
    RowNormLaunch r = norm_launch(h, d.dtype, y, d.m, d.n, norm);
    r.partials = partials, r.parts = parts;
    r.bias = d.bias, r.skip = residual, r.skip_period = d.m;
    return cuda_status(launch_row_norm(r, h.stream), what);
  }
  INGOT_RETURN_IF_ERROR(lt_gemm(h, d, a, w, y));
  return layer_norm_in_place(h, d.dtype, y, d.m, d.n, norm, what);
}

}  // namespace ingot::cuda
