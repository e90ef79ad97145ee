// Device helpers of the data-movement kernels (tensor_*.cu): byte units to move elements in,
// index division by multiply-shift, and the launch shapes of grid-stride loops.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_common.cuh"

namespace ingot::cuda::tensor_dev {

// The register type that moves `Bytes` bytes in one load/store.
template <int Bytes>
struct UnitOf;
template <>
struct UnitOf<1> {
  using type = uint8_t;
};
template <>
struct UnitOf<2> {
  using type = uint16_t;
};
template <>
struct UnitOf<4> {
  using type = uint32_t;
};
template <>
struct UnitOf<8> {
  using type = uint2;
};
template <>
struct UnitOf<16> {
  using type = uint4;
};

// Calls f(std::integral_constant<int, B>{}) for B = bytes in {1, 2, 4, 8, 16}; false otherwise.
template <class F>
bool dispatch_unit(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      f(std::integral_constant<int, 1>{});
      return true;
    case 2:
      f(std::integral_constant<int, 2>{});
      return true;
    case 4:
      f(std::integral_constant<int, 4>{});
      return true;
    case 8:
      f(std::integral_constant<int, 8>{});
      return true;
    case 16:
      f(std::integral_constant<int, 16>{});
      return true;
    default:
      return false;
  }
}

inline bool aligned_to(const void* p, size_t a) { return (reinterpret_cast<uintptr_t>(p) % a) == 0; }

// The widest unit (<= 16 bytes, a multiple of esize) dividing every byte count in `counts`
// and every pointer in `ptrs`.
inline size_t widest_unit(size_t esize, const int64_t* counts, int ncounts, const void* const* ptrs, int nptrs) {
  for (size_t u = 16; u > esize; u /= 2) {
    if (u % esize) continue;
    bool ok = true;
    for (int i = 0; ok && i < ncounts; ++i) ok = counts[i] % int64_t(u) == 0;
    for (int i = 0; ok && i < nptrs; ++i) ok = ptrs[i] == nullptr || aligned_to(ptrs[i], u);
    if (ok) return u;
  }
  return esize;
}

// Index types: 32-bit when every index and offset of a launch is below 2^31 (the common case;
// divisions then are a multiply-high and a shift), 64-bit otherwise.
template <class Idx>
struct Divisor;

// n / d for n < 2^31 by Granlund-Montgomery's round-up method: with l = ceil(log2 d) and
// m = floor(2^32·(2^l - d) / d) + 1, n / d = (mulhi(n, m) + n) >> l; the sum fits 32 bits
// because mulhi(n, m) <= n < 2^31. d = 1 gives m = 1, l = 0.
template <>
struct Divisor<uint32_t> {
  uint32_t d = 1, mul = 1, shift = 0;
  Divisor() = default;
  explicit Divisor(int64_t divisor) : d(uint32_t(divisor)) {
    uint32_t l = 0;
    while ((uint64_t(1) << l) < d) ++l;
    mul = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << l) - d)) / d + 1);
    shift = l;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, mul) + n) >> shift; }
};

template <>
struct Divisor<uint64_t> {
  uint64_t d = 1;
  Divisor() = default;
  explicit Divisor(int64_t divisor) : d(uint64_t(divisor)) {}
  __device__ __forceinline__ uint64_t div(uint64_t n) const { return n / d; }
};

// Signed offsets matching an index type.
template <class Idx>
using OffsetOf = std::conditional_t<sizeof(Idx) == 4, int32_t, int64_t>;

// 32-bit indexing is safe when every count and every |offset| is below this.
constexpr int64_t kIdx32Limit = int64_t(1) << 31;

// Calls f(Idx{}) with uint32_t when `extent` < 2^31, else uint64_t.
template <class F>
void dispatch_index(int64_t extent, F&& f) {
  if (extent < kIdx32Limit)
    f(uint32_t{});
  else
    f(uint64_t{});
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (the cap keeps 32-bit loop indices from
// overflowing: i + gridDim·blockDim < 2^31 + 2^28).
inline unsigned grid_for(int64_t n, int threads = kThreads) { return blocks_for(n, threads, int64_t(1) << 20); }

}  // namespace ingot::cuda::tensor_dev
