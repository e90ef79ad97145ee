// A dense, row-major tensor in host memory. Copies share the buffer (like a shared_ptr);
// use clone() for a deep copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ingot/dtype.h"

namespace ingot {

using Shape = std::vector<int64_t>;

// The number of elements; INT64_MAX when the product does not fit (a shape no buffer can hold,
// so allocating it fails instead of wrapping around to a small buffer).
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "1x128", "scalar" for rank 0

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled, 64-byte aligned buffer.
  Tensor(DType dtype, Shape shape);
  // A view of memory someone else owns; `owner` keeps it alive (may be null if the caller
  // guarantees the lifetime).
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return int(shape_.size()); }
  int64_t dim(int i) const { return shape_[size_t(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }

  Tensor clone() const;
  // Same buffer, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // Reads element i as double / int64 whatever the dtype (for small shape tensors).
  double scalar_as_double(int64_t i = 0) const;
  int64_t scalar_as_int(int64_t i = 0) const;
  std::vector<int64_t> to_int_vector() const;

 private:
  Tensor(DType dtype, Shape shape, const void* fill);

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

}  // namespace ingot
