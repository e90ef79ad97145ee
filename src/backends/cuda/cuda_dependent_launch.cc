// dependent_launch_enabled (cuda_dependent_launch.h).
#include "backends/cuda/cuda_dependent_launch.h"

#include <cstdlib>
#include <cstring>

namespace ingot::cuda {

// Read at every launch (a getenv beside a launch's microseconds), so that a test can compare
// both ways in one process.
bool dependent_launch_enabled() {
  const char* e = std::getenv("INGOT_CUDA_PDL");
  return e && std::strcmp(e, "1") == 0;
}

}  // namespace ingot::cuda
