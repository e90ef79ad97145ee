#include "ir/shape_util.h"

#include <algorithm>

namespace ingot {

Expected<Shape> broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : ", ") + shape_str(t);
      return invalid_argument("shapes cannot be broadcast together: " + all);
    }
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = int(s.size()) - 2; i >= 0; --i) st[size_t(i)] = st[size_t(i) + 1] * s[size_t(i) + 1];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  auto in_st = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : in_st[i];
  return st;
}

Expected<int> normalize_axis(int64_t axis, int rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return invalid_argument(what + " " + std::to_string(axis) + " is out of range for rank " +
                            std::to_string(rank));
  }
  return int(axis < 0 ? axis + rank : axis);
}

Shape channels_first_shape(const Shape& s, bool channels_last) {
  if (!channels_last || s.size() < 3) return s;
  Shape r = {s[0], s.back()};
  r.insert(r.end(), s.begin() + 1, s.end() - 1);
  return r;
}

}  // namespace ingot
