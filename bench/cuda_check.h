// CK(expr): the benches' CUDA error check (a bench has no error channel to return to: it prints
// where and what, and exits). Host-only, so the .cc benches take it as well as the .cu ones.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                     \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)
