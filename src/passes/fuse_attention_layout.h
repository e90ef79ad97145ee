// Symbolic layouts for the attention matcher. Exporters move Q/K/V between [B,S,hidden] and
// per-head [B,H,S,D] with every mix of Reshape and Transpose (and flattened [B*H,S,D] detours,
// 2-D [B*S,hidden] projections). Instead of recognising each sequence, the matcher tracks what
// every axis holds: a Layout is a list of axes, each axis a row-major group of atoms (batch,
// sequence, head, head size...). Reshape regroups consecutive atoms (it never moves data),
// Transpose permutes axes. Atom sizes come from shape inference of a probe with distinct batch
// and sequence sizes; the result is then checked against every other probe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "ingot/tensor.h"

namespace ingot::attn {

enum Atom : int { kB, kS, kE, kT, kH, kD, kM, kNumAtoms };  // kT: the Q|K|V part of packed weights
using Group = std::vector<Atom>;
using Layout = std::vector<Group>;
using Sizes = std::array<int64_t, kNumAtoms>;

inline int64_t group_size(const Group& g, const Sizes& s) {
  int64_t n = 1;
  for (Atom a : g) n *= s[size_t(a)];
  return n;
}

inline bool fits(const Layout& l, const Shape& shape, const Sizes& s) {
  if (l.size() != shape.size()) return false;
  for (size_t i = 0; i < l.size(); ++i)
    if (group_size(l[i], s) != shape[i]) return false;
  return true;
}

inline Group flatten(const Layout& l, size_t begin = 0, size_t end = SIZE_MAX) {
  Group f;
  for (size_t i = begin; i < l.size() && i < end; ++i) f.insert(f.end(), l[i].begin(), l[i].end());
  return f;
}

// The layout after a Reshape to `out`: each output dim must be a run of consecutive atoms.
// Atoms of size 1 join the run that is open when they come (a later probe with other sizes
// catches a wrong guess).
inline std::optional<Layout> regroup(const Layout& in, const Shape& out, const Sizes& s) {
  Group flat = flatten(in);
  Layout r;
  size_t k = 0;
  for (int64_t n : out) {
    Group g;
    int64_t prod = 1;
    while (prod < n && k < flat.size()) {
      g.push_back(flat[k]);
      prod *= s[size_t(flat[k++])];
    }
    if (prod != n) return std::nullopt;
    r.push_back(g);
  }
  for (; k < flat.size(); ++k) {
    if (s[size_t(flat[k])] != 1 || r.empty()) return std::nullopt;
    r.back().push_back(flat[k]);
  }
  return r;
}

inline std::optional<Layout> permute(const Layout& in, std::vector<int64_t> perm) {
  if (perm.empty())
    for (int64_t i = int64_t(in.size()) - 1; i >= 0; --i) perm.push_back(i);
  if (perm.size() != in.size()) return std::nullopt;
  Layout r;
  std::vector<bool> seen(in.size());
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(in.size()) || seen[size_t(p)]) return std::nullopt;
    seen[size_t(p)] = true;
    r.push_back(in[size_t(p)]);
  }
  return r;
}

// True when l is `lead` batch axes holding exactly [B, H] in order, then the groups `tail`.
inline bool heads_layout(const Layout& l, const Layout& tail) {
  if (l.size() < tail.size()) return false;
  size_t nlead = l.size() - tail.size();
  if (flatten(l, 0, nlead) != Group{kB, kH}) return false;
  for (size_t i = 0; i < tail.size(); ++i)
    if (l[nlead + i] != tail[i]) return false;
  return true;
}

inline std::string str(const Layout& l) {
  static const char* names[] = {"B", "S", "E", "3", "H", "D", "M"};
  std::string s = "[";
  for (size_t i = 0; i < l.size(); ++i) {
    s += i ? ", " : "";
    for (size_t j = 0; j < l[i].size(); ++j) s += std::string(j ? "*" : "") + names[l[i][j]];
    if (l[i].empty()) s += "1";
  }
  return s + "]";
}

}  // namespace ingot::attn
