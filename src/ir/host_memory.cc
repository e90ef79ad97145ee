// host_memory_available and its parts (host_memory.h).
#include "ir/host_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace ingot {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::optional<uint64_t> number(const std::string& text) {
  std::istringstream in(text);
  unsigned long long v = 0;
  if (!(in >> v)) return std::nullopt;
  return uint64_t(v);
}

// The value of `key` in "key value" lines (memory.stat, /proc/meminfo with "key:").
std::optional<uint64_t> field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0 && line.size() > key.size() && (line[key.size()] == ' ' || line[key.size()] == ':'))
      return number(line.substr(key.size() + 1));
  return std::nullopt;
}

// The process's memory cgroup directories to look in, most specific first: from /proc/self/cgroup
// under the v2 and v1 mounts, then the mounts' roots (a container sees its own group there).
std::vector<std::pair<std::string, bool>> cgroup_dirs() {
  std::vector<std::pair<std::string, bool>> dirs;  // (directory, is v2)
  std::istringstream in(read_file("/proc/self/cgroup"));
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) dirs.push_back({"/sys/fs/cgroup" + path, true});
    else if (controllers == "memory" || controllers.find("memory,") == 0 || controllers.find(",memory") != std::string::npos)
      dirs.push_back({"/sys/fs/cgroup/memory" + path, false});
  }
  dirs.push_back({"/sys/fs/cgroup", true});
  dirs.push_back({"/sys/fs/cgroup/memory", false});
  return dirs;
}

// The first of cgroup_dirs() with a limit file, found once: a process stays in its group.
struct CgroupFiles {
  std::string limit, usage, stat;
};
const std::optional<CgroupFiles>& cgroup_files() {
  static const std::optional<CgroupFiles> files = []() -> std::optional<CgroupFiles> {
    for (const auto& [dir, v2] : cgroup_dirs()) {
      CgroupFiles f{dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"),
                    dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"), dir + "/memory.stat"};
      if (!read_file(f.limit).empty()) return f;
    }
    return std::nullopt;
  }();
  return files;
}

std::optional<uint64_t> cgroup_headroom_now() {
  const auto& f = cgroup_files();
  if (!f) return std::nullopt;
  return cgroup_headroom(read_file(f->limit), read_file(f->usage), read_file(f->stat));
}

}  // namespace

std::optional<uint64_t> meminfo_available(const std::string& meminfo) {
  auto kib = field(meminfo, "MemAvailable");
  if (!kib) return std::nullopt;
  return *kib * 1024;
}

std::optional<uint64_t> cgroup_headroom(const std::string& limit, const std::string& usage, const std::string& stat) {
  if (limit.rfind("max", 0) == 0) return std::nullopt;
  const auto l = number(limit), u = number(usage);
  if (!l || !u || *l >= (uint64_t(1) << 62)) return std::nullopt;  // v1 writes "no limit" as ~2^63
  auto inactive = field(stat, "total_inactive_file");
  if (!inactive) inactive = field(stat, "inactive_file");
  const uint64_t used = *u - std::min(*u, inactive.value_or(0));
  return *l > used ? *l - used : 0;
}

bool host_memory_available(size_t bytes) {
  if (bytes < kHostMemoryCheckBytes) return true;
  std::optional<uint64_t> avail = meminfo_available(read_file("/proc/meminfo"));
  if (auto h = cgroup_headroom_now()) avail = avail ? std::min(*avail, *h) : *h;
  return !avail || uint64_t(bytes) <= *avail;
}

}  // namespace ingot
