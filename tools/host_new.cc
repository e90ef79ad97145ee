// The CLI's global operator new and delete (replacing libstdc++'s for the whole process, the
// library's containers included): a request of at least kHostMemoryCheckBytes that exceeds the
// memory the kernel has available throws std::bad_alloc (host_memory.h). Without this, Linux's
// overcommit lets a std::vector of an absurd --shapes succeed and its zero-fill get the process
// killed with no message; with it, the node or input that asked becomes the error line.
// Aligned new/delete are left to libstdc++ (each pair stays consistent).
#include <cstdlib>
#include <new>

#include "ir/host_memory.h"

void* operator new(std::size_t n) {
  if (n >= ingot::kHostMemoryCheckBytes && !ingot::host_memory_available(n)) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
