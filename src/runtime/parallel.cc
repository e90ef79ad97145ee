#include "runtime/parallel.h"

namespace ingot {
void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}
}  // namespace ingot
