// prefetch_ranges() and the switch (see cuda_l2_prefetch.h).
#include "backends/cuda/cuda_l2_prefetch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ingot::cuda {

std::vector<ByteRange> prefetch_ranges(std::vector<ByteRange> ranges, int64_t budget) {
  std::erase_if(ranges, [](const ByteRange& r) { return r.bytes <= 0; });
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> merged;
  for (const ByteRange& r : ranges) {
    if (!merged.empty() && r.offset <= merged.back().offset + merged.back().bytes) {
      ByteRange& m = merged.back();
      m.bytes = std::max(m.bytes, r.offset + r.bytes - m.offset);
    } else {
      merged.push_back(r);
    }
  }
  while (merged.size() > size_t(L2Prefetch::kMaxRanges)) {
    size_t best = 0;
    int64_t best_gap = INT64_MAX;
    for (size_t i = 0; i + 1 < merged.size(); ++i) {
      const int64_t gap = merged[i + 1].offset - (merged[i].offset + merged[i].bytes);
      if (gap < best_gap) best_gap = gap, best = i;
    }
    merged[best].bytes = merged[best + 1].offset + merged[best + 1].bytes - merged[best].offset;
    merged.erase(merged.begin() + std::ptrdiff_t(best) + 1);
  }
  std::vector<ByteRange> out;
  int64_t left = budget;
  for (ByteRange r : merged) {
    if (left <= 0) break;
    // A 32-bit length per range (cp.async.bulk's operand), rounded to its 16-byte unit.
    r.bytes = std::min({(r.bytes + 15) / 16 * 16, (left + 15) / 16 * 16, int64_t(1) << 31});
    left -= r.bytes;
    out.push_back(r);
  }
  return out;
}

bool l2_prefetch_enabled() {
  const char* e = std::getenv("INGOT_CUDA_L2_PREFETCH");
  return !e || std::strcmp(e, "0") != 0;
}

}  // namespace ingot::cuda
