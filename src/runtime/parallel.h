// Multi-threading for ingot's own kernels. OpenMP, because oneDNN (the GEMM/conv library)
// uses it too: one pool, no oversubscription.
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

namespace ingot {

inline int num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n);

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when the work is
// small (n * cost_per_item below ~32k operations) so tiny ops pay no threading overhead.
template <class F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n * std::max<int64_t>(cost_per_item, 1) < 32768 || omp_in_parallel()) {
    fn(int64_t(0), n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, n);
#pragma omp parallel for num_threads(int(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
    fn(b, e);
  }
}

}  // namespace ingot
