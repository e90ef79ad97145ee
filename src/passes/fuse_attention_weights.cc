// Weight plumbing for fuse_attention: Gemm transB weights transposed, separate Q/K/V weights and
// biases concatenated into the packed [E, 3N] / [3N] tensors ingot.Attention reads.
#include <cstring>

#include "passes/fuse_attention_internal.h"

namespace ingot::attn {

Tensor transpose2d(const Tensor& t) {
  Tensor r(t.dtype(), {t.dim(1), t.dim(0)});
  size_t es = dtype_size(t.dtype());
  const char* s = static_cast<const char*>(t.raw());
  char* d = static_cast<char*>(r.raw());
  for (int64_t i = 0; i < t.dim(0); ++i)
    for (int64_t j = 0; j < t.dim(1); ++j)
      std::memcpy(d + size_t(j * t.dim(0) + i) * es, s + size_t(i * t.dim(1) + j) * es, es);
  return r;
}

// Concatenates 2-D tensors with equal row counts along columns (1-D: end to end). An undefined
// part stands for zeros of `widths[i]` columns.
Tensor concat_cols(const std::vector<Tensor>& parts, const std::vector<int64_t>& widths, DType dtype, int64_t rows,
                   bool one_d) {
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  Tensor r(dtype, one_d ? Shape{total} : Shape{rows, total});
  size_t es = dtype_size(dtype);
  char* d = static_cast<char*>(r.raw());
  int64_t col = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].defined()) {
      const char* s = static_cast<const char*>(parts[p].raw());
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(d + size_t(i * total + col) * es, s + size_t(i * widths[p]) * es, size_t(widths[p]) * es);
    }
    col += widths[p];
  }
  return r;
}

}  // namespace ingot::attn
