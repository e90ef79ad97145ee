// host_memory_available (host_memory.h).
#include "ir/host_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace ingot {

bool host_memory_available(size_t bytes) {
  if (bytes < kHostMemoryCheckBytes) return true;
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream in(line.substr(13));
    unsigned long long kib = 0;
    if (!(in >> kib)) return true;
    return bytes / 1024 <= kib;
  }
  return true;
}

}  // namespace ingot
