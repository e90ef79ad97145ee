// Whether the host can still give a large buffer. Linux overcommits: an allocation larger than
// the memory left succeeds, and the zero-fill or the writes that follow get the process killed
// by the kernel's OOM killer, which a user sees as a crash with no message. Large buffers
// (Tensor, the CPU arena) ask here first, so that a shape too large for the machine becomes an
// error naming what needed the memory.
#pragma once

#include <cstddef>

namespace ingot {

// Buffers below this are not checked (the check reads /proc/meminfo).
constexpr size_t kHostMemoryCheckBytes = size_t(256) << 20;

// False when `bytes` (at least kHostMemoryCheckBytes) exceeds the kernel's MemAvailable; true
// for smaller buffers and where /proc/meminfo cannot be read.
bool host_memory_available(size_t bytes);

}  // namespace ingot
