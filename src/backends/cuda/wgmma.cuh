// Hopper's warpgroup matrix product (wgmma, sm_90a only: the files that include this are built
// for sm_90a alone, CMakeLists.txt) on operands in 128-byte-swizzled shared memory, the layout
// the tensor copy engine writes with CU_TENSOR_MAP_SWIZZLE_128B: rows of 64 16-bit elements
// (128 bytes), 8-row groups of 1024 bytes, 1024-byte aligned.
//
// Fragments of one warpgroup (4 warps, warp w owning rows 16w..16w+15 of the 64; g = lane / 4,
// t = lane % 4), the same as mma.sync m16n8k16's per 8-column tile:
//   accumulator d[4j + e]: row g + 8·(e / 2), column 8j + 2t + e % 2
//   register A a[0..3]:    rows g, g + 8, g, g + 8; columns 2t, 2t + 1 (a[0], a[1]) and
//                          2t + 8, 2t + 9 (a[2], a[3]), two 16-bit values a register
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace ingot::cuda {

// The descriptor of a 128-byte-swizzled operand at shared address `addr` (8-row groups 1024
// bytes apart). K-major operands (rows of K): step 16 of K is addr + 32. MN-major operands
// (rows of MN, taken transposed): step 16 of K is addr + 16 rows · 128 bytes.
__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

#define INGOT_WGMMA_D32                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define INGOT_WGMMA_D32_OPERANDS                                                                              \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),   \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),  \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

template <class T> constexpr const char* wgmma_type();
template <> constexpr const char* wgmma_type<__half>() { return "f16"; }
template <> constexpr const char* wgmma_type<__nv_bfloat16>() { return "bf16"; }

// d[64 x 64] (+)= A[64 x 16] · B[16 x 64], both from shared memory: A K-major; B K-major
// (kTransB false: rows of N, e.g. K of attention for Q·Kᵀ) or MN-major (kTransB true: rows of
// K, e.g. a weight stored [K, N]). fp32 accumulators; kAccumulate false overwrites d, so the
// first product of a sum needs no zeroed accumulators (zeroing them while an earlier product
// is in flight makes ptxas serialize the wgmma).
template <class T, bool kTransB, bool kAccumulate = true>
__device__ __forceinline__ void wgmma_ss(float (&d)[32], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %35, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " INGOT_WGMMA_D32 ", %32, %33, acc, 1, 1, 0, %34;\n}\n"
                 : INGOT_WGMMA_D32_OPERANDS
                 : "l"(da), "l"(db), "n"(int(kTransB)), "n"(int(kAccumulate)));
  } else {
    asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %35, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " INGOT_WGMMA_D32 ", %32, %33, acc, 1, 1, 0, %34;\n}\n"
                 : INGOT_WGMMA_D32_OPERANDS
                 : "l"(da), "l"(db), "n"(int(kTransB)), "n"(int(kAccumulate)));
  }
#endif
}

// d[64 x 64] (+)= A[64 x 16] · B[16 x 64], A from registers (the fragment layout above), B
// MN-major in shared memory (rows of K: e.g. V of attention for P·V). fp32 accumulators;
// `accumulate` false overwrites d (see wgmma_ss). A's registers must not change until the
// product has completed (wgmma_wait).
template <class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t db, bool accumulate = true) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " INGOT_WGMMA_D32 ", {%32, %33, %34, %35}, %36, acc, 1, 1, 1;\n}\n"
                 : INGOT_WGMMA_D32_OPERANDS
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(int(accumulate)));
  } else {
    asm volatile("{\n.reg .pred acc;\nsetp.ne.b32 acc, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " INGOT_WGMMA_D32 ", {%32, %33, %34, %35}, %36, acc, 1, 1, 1;\n}\n"
                 : INGOT_WGMMA_D32_OPERANDS
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(int(accumulate)));
  }
#endif
}

#undef INGOT_WGMMA_D32
#undef INGOT_WGMMA_D32_OPERANDS

// Before the first wgmma that reads registers written by ordinary instructions (accumulators,
// register A), and between such writes and the next wgmma.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// Closes the group of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

}  // namespace ingot::cuda
