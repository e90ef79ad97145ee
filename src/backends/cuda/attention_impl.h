// Launcher of ingot.Attention's core (softmax(scale · Q Kᵀ + mask) V per head), shared by
// attention.cc (host side) and attention.cu (device code).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_l2_prefetch.h"
#include "ingot/dtype.h"

namespace ingot::cuda {

// Largest head size either kernel handles (the flash kernel keeps a 16-row × D block of
// output in registers; the generic kernel stages K and V tiles of D floats in shared memory).
constexpr int64_t kAttentionMaxHeadDim = 128;
// Query positions one launch of the query-rows kernel takes (more are launched in chunks).
constexpr int kAttentionQueryChunk = 16;

// What masks the scores, as both launchers below take it.
struct AttentionMask {
  // Read through element strides of its broadcast to [B, H, S, S] (0 on broadcast axes); null:
  // none. kBool or an integer dtype: zero adds `filter`; a float dtype: added as is.
  const void* data = nullptr;
  DType dtype = DType::kBool;
  int64_t b = 0, h = 0, q = 0, k = 0;
  float filter = 0.f;
  bool causal = false;       // no key right of the query
  bool nan_to_zero = false;  // a row with no key left is 0 (else NaN)
};

struct AttentionCoreArgs {
  const void* qkv = nullptr;  // [B*S, 3N]: Q | K | V, head h at columns h*D of each
  void* context = nullptr;    // [B*Sq, N]: heads side by side (head h at columns h*D)
  int64_t B = 0, S = 0, H = 0, D = 0;
  DType dtype = DType::kFloat32;  // of qkv and context
  AttentionMask mask;
  float scale = 1.f;
  int sm_count = 1;  // multiprocessors, to size query blocks so small batches fill the GPU
  // At batch 1, the query blocks of a head share its K and V by the copy engine's multicast where
  // the shape allows (attention.cu says which).
  bool multicast = false;
  // Many heads on compute capability 9.0: the wgmma kernel where attention_wgmma_fits.
  bool wgmma = false;
  // ingot.Attention's query_rows: the query positions (in [0, S)) of the Sq = query_count output
  // rows of each batch; query_count 0: every position (Sq = S).
  const int64_t* query_pos = nullptr;
  int64_t query_count = 0;
  L2Prefetch prefetch;  // weights the next steps read, requested by the core's kernel
};

// ingot.Attention's one-query path with the keys and values absorbed into the query and the
// output (attention.cc, absorbed_context): scores q·K_hᵀ = (W_k,h q_h)·Xᵀ up to a constant (K's
// bias) that the softmax drops, and P·V_h = (P·X)·W_v,h + b_v,h, so no key or value is computed
// for the S positions. This is the middle of it, after q̃ = scale · W_k,h q_h and before the
// context x̄_h · W_v,h + cbias_h (attention_absorbed.cu).
constexpr int64_t kAbsorbedMaxKeys = 512;

struct AbsorbedQueryArgs {
  const void* x = nullptr;   // [B, S, E]: the attention's input
  const void* qt = nullptr;  // [B, H, E]: scale · W_k,h q_h
  const void* bv = nullptr;  // [N]: V's bias, or null
  void* xbar = nullptr;      // [B, H, E] out: p_h · X_b
  void* cbias = nullptr;     // [B, N] out: b_v (0 without), or fill where the row is undefined
  int64_t B = 0, S = 0, E = 0, H = 0, D = 0, pos = 0;  // pos: the query position, in [0, S)
  DType dtype = DType::kFloat16;
  AttentionMask mask;
  int max_smem = 0;  // the device's opt-in shared memory per block
  L2Prefetch prefetch;
};

// Whether the absorbed path's kernel takes these sizes: float16/bfloat16, E / 128 in {2, 3, 4,
// 6, 8}, at most 16 heads, S <= kAbsorbedMaxKeys, its shared memory within max_smem.
bool absorbed_query_fits(DType dtype, int64_t S, int64_t E, int64_t H, int64_t D, int max_smem);

// Enqueues the kernel on `stream`; cudaErrorInvalidValue when absorbed_query_fits is false.
cudaError_t launch_absorbed_query(const AbsorbedQueryArgs& args, cudaStream_t stream);

// The core on Hopper's warpgroup products (attention_wgmma.cu, built for sm_90a alone): whether it
// takes these arguments (wgmma set, float16/bfloat16, D 64, a key mask or none, not causal, S a
// multiple of 64 up to 256, every position queried, at least two query blocks a multiprocessor),
// and its launch: cudaErrorInvalidValue where it does not fit, cudaErrorNotSupported (nothing
// launched; the caller takes another kernel) where the copy engine cannot describe qkv (a driver
// without tensor maps, a base that is not 16-byte aligned).
bool attention_wgmma_fits(const AttentionCoreArgs& args);
cudaError_t launch_attention_wgmma(const AttentionCoreArgs& args, cudaStream_t stream);

// ingot.Attention's QKV product and core in one kernel on Hopper (attention_projected.cu, built
// for sm_90a alone): context = softmax(scale · Q Kᵀ + mask) V per head with q|k|v = X · W_qkv +
// b_qkv computed tile by tile in the kernel, never stored. One CTA's tile is one (batch, head):
// S must be 128 and the head size 64.
struct ProjectedAttentionArgs {
  const void* x = nullptr;     // [B*S, E]
  const void* w = nullptr;     // [E, 3N]: W_q | W_k | W_v, head h at columns h*64 of each
  const void* bias = nullptr;  // [3N] or null; 16-byte aligned
  void* context = nullptr;     // [B*S, N]
  int64_t B = 0, S = 0, E = 0, H = 0, D = 0;
  DType dtype = DType::kFloat16;
  AttentionMask mask;
  float scale = 1.f;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  L2Prefetch prefetch;  // requested once the first tile's copies are asked for
};

// Whether the kernel takes these arguments: float16/bfloat16, compute capability 9.0, S 128, D
// 64, E a multiple of 8, a key mask or none (not causal, no per-query mask), and at least one
// (batch, head) a multiprocessor (fewer leave SMs idle that the unfused pair's smaller blocks
// use). The launch: cudaErrorInvalidValue where it does not fit, cudaErrorNotSupported (nothing
// launched; the caller takes the unfused pair) where the copy engine cannot describe a tensor or
// the bias is not 16-byte aligned.
bool projected_attention_fits(const ProjectedAttentionArgs& args);
cudaError_t launch_projected_attention(const ProjectedAttentionArgs& args, cudaStream_t stream);

// Enqueues the core on `stream`; D <= kAttentionMaxHeadDim, dtype float32/float16/bfloat16,
// mask_dtype bool/int8/uint8/int32/int64/float32/float16/bfloat16.
cudaError_t launch_attention_core(const AttentionCoreArgs& args, cudaStream_t stream);

}  // namespace ingot::cuda
