// How fast wgmma multiplies from shared memory, alone and beside bulk copies into shared memory:
// the test of developer session 46's model (docs/PERFORMANCE.md) that a K = 768 product's
// wgmma stops near 75-80 % of the tensor cores' peak because its operand reads (W's 16 x N slice
// for every 64 rows of A: 64 bytes a cycle at the peak, plus A's 4096 / N) and the stages' copies
// share shared memory's 128 bytes a cycle.
//
// Every multiprocessor runs one CTA: one or two warpgroups repeat a K step of wgmma m64nNk16 over
// fixed tiles (four 16-deep products a step for each of `halves` 64-row blocks, as
// pingpong_bench's consumers do, without waiting on any barrier), and, when asked, one more warp
// streams 32 KB bulk copies from L2 into a ring of four other buffers for as long as they run.
// Reported: the tensor cores' rate in FLOP a cycle of each multiprocessor against the fp16 dense
// peak of 4096 (clock cycles, so the SM clock does not enter), and the copies' bytes a cycle.
//
//   wgmma_rate_bench [--iters I] [--spread S] [--tensor] [--ring D]      (on the GPU machine; sm_90a)
//   --tensor: the copies as two [128 x 64] float16 tensor boxes a chunk (128-byte swizzled, as the
//   products' stages), not one 32 KB bulk copy.
//   --ring D: D 32 KB copies in flight (1-6 at N = 128, up to 4 at 192 and 256; default 4): with
//   Little's law, bytes in flight over the rate give the copies' latency. (Session 47, --spread 3
//   --tensor, beside wgmma at 96.3-96.5 %: 32 bytes a cycle with one copy in flight, 38-39 with two
//   to six, so past two the copies are bound by rate, not latency; ~1,000 cycles for one.)
//   --spread S: CTA b copies from chunk S·b on (the 16 MB source stays in L2), so that the CTAs read
//   distinct lines, as a product's tiles do; 0 (default): every CTA the same chunks at once.
#include <cuda.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_tensor_map.h"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/wgmma.cuh"
#include "cuda_check.h"

namespace {

using namespace ingot::cuda;

constexpr uint32_t kBoxBytes = 64 * 64 * 2, kABytes = 128 * 64 * 2, kChunk = 32 * 1024;
// The copies' ring: `ring` buffers in flight, up to kRingMax (six at N = 128, four beside W's wider tile).
template <int N>
constexpr uint32_t kRingMax = N == 128 ? 6 : 4;

// Shared memory: A [128 x 64] K-major, W [64 x N] as N / 64 MN-major boxes (both 128-byte
// swizzled, as the products' stages), then the copies' ring.
template <int N>
constexpr size_t kSmemBytes = 1024 + kABytes + size_t(N / 64) * kBoxBytes + kRingMax<N> * kChunk;

struct Result {
  unsigned long long cycles[2];  // each warpgroup's, from its first product to its last one's end
  unsigned long long copy_bytes, copy_cycles;
};

template <int N, int kHalves, int kWarpgroups, bool kCopy>
__global__ void __launch_bounds__(kWarpgroups * 128 + 32, 1)
    wgmma_rate_kernel(const __grid_constant__ CUtensorMap boxes, const uint8_t* src, size_t src_bytes, int iters,
                      int spread, bool tensor, uint32_t depth, Result* out) {
  constexpr uint32_t kRing = kRingMax<N>;
  extern __shared__ __align__(16) uint8_t smem_raw[];
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t as = base, ws = as + kABytes, ring = ws + (N / 64) * kBoxBytes;
  __shared__ __align__(8) uint64_t filled[kRing];
  __shared__ int done;
  const int tid = int(threadIdx.x), consumers = kWarpgroups * 128;
  // Operands that are neither zero nor repeated (the tensor cores' power follows the bits).
  for (uint32_t i = uint32_t(tid); i < (kABytes + (N / 64) * kBoxBytes) / 4; i += blockDim.x) {
    const uint32_t h = (i * 2654435761u) ^ (blockIdx.x * 40503u);
    const __half2 v = __floats2half2_rn(float(h % 97) / 97.f - 0.5f, float(h / 97 % 89) / 89.f - 0.5f);
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(as + 4 * i), "r"(*reinterpret_cast<const uint32_t*>(&v)));
  }
  if (tid == 0) {
    for (uint32_t b = 0; b < kRing; ++b) mbar_init(smem_addr(&filled[b]));
    done = 0;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the fills, before wgmma reads them
  __syncthreads();

  if (tid >= consumers) {  // the copying warp
    if (!kCopy || tid != consumers) return;
    const unsigned long long t0 = clock64();
    unsigned long long bytes = 0;
    const size_t chunks = src_bytes / kChunk;
    uint32_t i = 0;
    for (; kWarpgroups == 0 ? i < uint32_t(iters) : !*reinterpret_cast<volatile int*>(&done); ++i) {
      const uint32_t b = i % depth, bar = smem_addr(&filled[b]);
      if (i >= depth) mbar_wait_parity(bar, ((i / depth) - 1) & 1);
      mbar_expect_tx(bar, kChunk);
      // spread: each CTA its own stretch of the source (distinct lines from L2, as a product's
      // tiles), else all of them the same chunks at once.
      const size_t chunk = (i + blockIdx.x * uint32_t(spread)) % chunks;
      if (tensor) {  // as a product's stages: two [128 x 64] float16 boxes, 128-byte swizzled
        tensor_copy(ring + b * kChunk, &boxes, 0, int(chunk * 256), bar);
        tensor_copy(ring + b * kChunk + kChunk / 2, &boxes, 0, int(chunk * 256 + 128), bar);
      } else {
        bulk_copy(ring + b * kChunk, src + chunk * kChunk, kChunk, bar);
      }
      bytes += kChunk;
    }
    for (uint32_t j = i >= depth ? i - depth : 0; j < i; ++j) mbar_wait_parity(smem_addr(&filled[j % depth]), (j / depth) & 1);
    out[blockIdx.x].copy_bytes = bytes, out[blockIdx.x].copy_cycles = clock64() - t0;
    return;
  }

  const int wg = tid / 128, lt = tid % 128;
  float acc[kHalves][N / 2];
  const unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint64_t db = sw128_mn_desc(ws + k * 16 * 128, kBoxBytes);
#pragma unroll
      for (int h = 0; h < kHalves; ++h) wgmma_ss_wide<__half, N, true>(acc[h], sw128_desc(as + h * 64 * 128 + k * 32), db, it > 0 || k > 0);
    }
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  const unsigned long long t1 = clock64();
  // A use of every accumulator block (never taken): ptxas drops wgmma whose results nothing reads.
  float sum = 0.f;
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) sum += acc[h][i];
  if (iters < 0) out[blockIdx.x].copy_bytes = static_cast<unsigned long long>(sum);
  if (lt == 0) out[blockIdx.x].cycles[wg] = t1 - t0;
  asm volatile("bar.sync 1, %0;" ::"r"(consumers) : "memory");
  if (tid == 0) *reinterpret_cast<volatile int*>(&done) = 1;
}

struct Config {
  const char* name;
  void (*launch)(const CUtensorMap&, const uint8_t*, size_t, int, int, bool, uint32_t, Result*, int);
  int n, halves, warpgroups;
  bool copy;
};

template <int N, int kHalves, int kWarpgroups, bool kCopy>
void launch(const CUtensorMap& boxes, const uint8_t* src, size_t bytes, int iters, int spread, bool tensor,
            uint32_t depth, Result* out, int ctas) {
  auto* kernel = wgmma_rate_kernel<N, kHalves, kWarpgroups, kCopy>;
  constexpr size_t kSmem = kSmemBytes<N>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmem)));
  kernel<<<ctas, kWarpgroups * 128 + 32, kSmem>>>(boxes, src, bytes, iters, spread, tensor,
                                                  std::min(depth, kRingMax<N>), out);
  CK(cudaGetLastError());
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 4000, spread = 0;
  bool tensor = false;
  uint32_t depth = 4;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--ring" && i + 1 < argc) depth = uint32_t(std::atoi(argv[++i]));
    if (std::string(argv[i]) == "--tensor") tensor = true;
    if (std::string(argv[i]) == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    if (std::string(argv[i]) == "--spread" && i + 1 < argc) spread = std::atoi(argv[++i]);
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t src_bytes = size_t(16) << 20;  // L2-resident
  uint8_t* src;
  Result* out;
  CK(cudaMalloc(&src, src_bytes));
  CK(cudaMemset(src, 0x3c, src_bytes));
  CK(cudaMalloc(&out, sizeof(Result) * size_t(sms)));
  CUtensorMap boxes{};  // the source as [rows, 64] float16 in [128 x 64] boxes
  if (!ingot::cuda::encode_tensor_map(&boxes, ingot::DType::kFloat16, src, int64_t(src_bytes / 128), 64, 64, 128, 64, true)) {
    printf("encode_tensor_map failed\n");
    return 1;
  }
  const Config configs[] = {
      {"copies alone", launch<128, 1, 0, true>, 0, 0, 0, true},
      {"N 128 x2 rows, 1 wg", launch<128, 2, 1, false>, 128, 2, 1, false},
      {"N 128 x2 rows, 1 wg + copies", launch<128, 2, 1, true>, 128, 2, 1, true},
      {"N 128 x2 rows, 2 wg", launch<128, 2, 2, false>, 128, 2, 2, false},
      {"N 128 x2 rows, 2 wg + copies", launch<128, 2, 2, true>, 128, 2, 2, true},
      {"N 192 x1 rows, 1 wg", launch<192, 1, 1, false>, 192, 1, 1, false},
      {"N 192 x1 rows, 2 wg", launch<192, 1, 2, false>, 192, 1, 2, false},
      {"N 192 x1 rows, 2 wg + copies", launch<192, 1, 2, true>, 192, 1, 2, true},
      {"N 256 x1 rows, 1 wg", launch<256, 1, 1, false>, 256, 1, 1, false},
      {"N 256 x1 rows, 2 wg", launch<256, 1, 2, false>, 256, 1, 2, false},
      {"N 256 x1 rows, 2 wg + copies", launch<256, 1, 2, true>, 256, 1, 2, true},
  };
  printf("%-30s %10s %8s %12s %14s\n", "configuration", "FLOP/clk", "of peak", "smem B/clk", "copies B/clk");
  for (const Config& c : configs) {
    std::vector<Result> r(static_cast<size_t>(sms));
    for (int rep = 0; rep < 2; ++rep) {  // the first launch warms up
      CK(cudaMemset(out, 0, sizeof(Result) * size_t(sms)));
      c.launch(boxes, src, src_bytes, c.warpgroups ? iters : iters / 4, spread, tensor, depth, out, sms);
      CK(cudaDeviceSynchronize());
    }
    CK(cudaMemcpy(r.data(), out, sizeof(Result) * size_t(sms), cudaMemcpyDeviceToHost));
    double rate = 0, copy = 0;
    for (const Result& x : r) {
      unsigned long long cyc = 0;
      for (int w = 0; w < c.warpgroups; ++w) cyc = std::max(cyc, x.cycles[w]);
      if (c.warpgroups) rate += double(iters) * 4 * c.halves * 2.0 * 64 * c.n * 16 * c.warpgroups / double(cyc);
      if (c.copy && x.copy_cycles) copy += double(x.copy_bytes) / double(x.copy_cycles);
    }
    rate /= sms, copy /= sms;
    // Shared-memory bytes the products read a cycle: per 64 x N x 16 product, A 2 KB and W 32·N.
    const double smem = c.warpgroups ? rate / (2.0 * 64 * c.n * 16) * (2048.0 + 32.0 * c.n) : 0;
    printf("%-30s %10.0f %7.1f%% %12.1f %14.1f\n", c.name, rate, 100 * rate / 4096, smem, copy);
  }
  CK(cudaFree(src));
  CK(cudaFree(out));
  return 0;
}
