// Whether the host can still give a large buffer. Linux overcommits: an allocation larger than
// the memory left succeeds, and the zero-fill or the writes that follow get the process killed
// by the kernel's OOM killer, which a user sees as a crash with no message. Large buffers
// (Tensor, the CPU arena, the CLI's operator new) ask here first, so that a shape too large for
// the machine becomes an error naming what needed the memory.
//
// "Available" is the smaller of the kernel's MemAvailable and the headroom of the process's
// memory cgroup (a container's limit: cgroup v2 memory.max, or v1 memory.limit_in_bytes, less
// what the group uses that cannot be reclaimed at once, i.e. its usage less its inactive file
// cache), since in a container the cgroup's OOM killer strikes long before the host runs out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ingot {

// Buffers below this are not checked (the check reads a few files under /proc and /sys).
constexpr size_t kHostMemoryCheckBytes = size_t(256) << 20;

// False when `bytes` (at least kHostMemoryCheckBytes) exceeds the memory available (above);
// true for smaller buffers and where nothing can be read.
bool host_memory_available(size_t bytes);

// The parts, on the files' text (exposed for tests):
// MemAvailable of /proc/meminfo, in bytes.
std::optional<uint64_t> meminfo_available(const std::string& meminfo);
// A memory cgroup's headroom in bytes: limit ("max" or a v1 limit near 2^63: none) less usage
// less the inactive file cache of its memory.stat (v2 "inactive_file", v1 "total_inactive_file"
// or "inactive_file"); nullopt when there is no limit or a number cannot be read.
std::optional<uint64_t> cgroup_headroom(const std::string& limit, const std::string& usage, const std::string& stat);

}  // namespace ingot
