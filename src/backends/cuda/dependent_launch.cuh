// Device side and launch of programmatic dependent launch (cuda_dependent_launch.h says when a
// kernel may use it and the rule it must keep).
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "backends/cuda/cuda_dependent_launch.h"

namespace ingot::cuda {

// Blocks until every kernel before this one in the stream has ended and its writes are visible.
// Returns at once when the kernel was launched in the ordinary way. Every thread that touches
// non-constant memory calls it (a CTA's threads may call it at different points).
__device__ __forceinline__ void wait_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel's CTAs be scheduled once every CTA of this one has called it (or ended):
// they then wait in wait_prior_grids() for this kernel's end, so calling it early is safe.
__device__ __forceinline__ void allow_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...) with programmatic stream serialization allowed
// (when dependent_launch_enabled()), in thread-block clusters of `cluster` CTAs when that is not
// 1x1x1; the kernel must keep the rule of cuda_dependent_launch.h. Returns the launch's error.
template <class... Params, class... Args>
cudaError_t launch_dependent_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                      cudaStream_t stream, dim3 cluster, Args&&... args) {
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (dependent_launch_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n++].val.clusterDim.z = cluster.z;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

template <class... Params, class... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                             Args&&... args) {
  return launch_dependent_clusters(kernel, grid, block, smem, stream, dim3(1, 1, 1), std::forward<Args>(args)...);
}

}  // namespace ingot::cuda
