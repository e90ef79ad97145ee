#include "io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace ingot {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<uintptr_t, size_t>& registry() {  // base -> size
  static std::map<uintptr_t, size_t> r;
  return r;
}

}  // namespace

void register_file_mapping(const void* base, size_t size) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[reinterpret_cast<uintptr_t>(base)] = size;
}

void unregister_file_mapping(const void* base) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(reinterpret_cast<uintptr_t>(base));
}

bool drop_file_pages(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  if (n == 0 || end < begin) return false;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().upper_bound(begin);
    if (it == registry().begin()) return false;
    --it;
    if (end > it->first + it->second) return false;
  }
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

}  // namespace ingot
