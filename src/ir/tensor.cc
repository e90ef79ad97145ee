#include "ingot/tensor.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "ir/dispatch.h"
#include "ir/host_memory.h"

namespace ingot {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out;
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), nullptr) {}

// The buffer starts as `fill` (nbytes of it) or zeros, and its padding to 64 bytes is zero.
Tensor::Tensor(DType dtype, Shape shape, const void* fill) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  // Dims are never negative here (shape inference and the CLI refuse them); a count whose bytes
  // (padded to 64) would not fit a size_t is memory no machine has.
  if (numel_ < 0 || uint64_t(numel_) > (std::numeric_limits<size_t>::max() - 64) / std::max<size_t>(1, dtype_size(dtype_)))
    throw std::bad_alloc();
  size_t bytes = nbytes();
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  if (!host_memory_available(alloc)) throw std::bad_alloc();
  void* p = std::aligned_alloc(64, alloc);
  if (!p) throw std::bad_alloc();
  if (fill) {
    std::memcpy(p, fill, bytes);
    std::memset(static_cast<std::byte*>(p) + bytes, 0, alloc - bytes);
  } else {
    std::memset(p, 0, alloc);
  }
  owner_ = std::shared_ptr<void>(p, std::free);
  data_ = p;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  return Tensor(dtype_, shape_, nbytes() ? data_ : nullptr);  // one pass: no zero fill first
}

Tensor Tensor::reshaped(Shape shape) const {
  assert(shape_numel(shape) == numel_);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::scalar_as_double(int64_t i) const {
  double out = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = double(static_cast<const T*>(data_)[i]);
  });
  return out;
}

int64_t Tensor::scalar_as_int(int64_t i) const {
  int64_t out = 0;
  dispatch_all(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = int64_t(static_cast<const T*>(data_)[i]);
  });
  return out;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel_), 0);
  for (int64_t i = 0; i < numel_; ++i) v[size_t(i)] = scalar_as_int(i);
  return v;
}

}  // namespace ingot
