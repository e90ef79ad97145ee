// src/backends/cuda/cuda_cublaslt_loader.cc: cuBLASLt is not linked into libingot but loaded on
// the first call of one of its functions, which then reaches the library (no GPU needed to ask
// its version). Builds without CUDA have nothing to test.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>

#ifdef INGOT_HAVE_CUDA
extern "C" size_t cublasLtGetVersion(void);
#endif

namespace ingot {
namespace {

bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(name) != std::string::npos) return true;
  return false;
}

TEST(CublasLtLoader, FirstCallLoadsTheLibrary) {
#ifndef INGOT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  const size_t version = cublasLtGetVersion();
  if (version == 0) GTEST_SKIP() << "libcublasLt is not installed here";
  EXPECT_GE(version, size_t(120000));  // CUDA 12 or later: major · 10000 + minor · 100 + patch
  EXPECT_TRUE(mapped("libcublasLt.so"));
#endif
}

}  // namespace
}  // namespace ingot
