#include "text/encoding_ops.h"

#include <algorithm>

namespace ingot::text {
namespace {

void keep(Encoding& e, size_t n, bool from_left) {
  if (n >= e.ids.size()) return;
  auto cut = [&](auto& v) {
    if (from_left) v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(n));
    else v.resize(n);
  };
  cut(e.ids);
  cut(e.type_ids);
  cut(e.attention_mask);
  cut(e.tokens);
}

}  // namespace

Status truncate(Encoding& a, Encoding* b, const TruncationSettings& t) {
  const size_t total = a.ids.size() + (b ? b->ids.size() : 0);
  if (t.max_length == 0) {
    keep(a, 0, t.from_left);
    if (b) keep(*b, 0, t.from_left);
    return Status::ok();
  }
  if (total <= t.max_length) return Status::ok();
  const size_t to_remove = total - t.max_length;
  using S = TruncationSettings::Strategy;
  if (t.strategy == S::kLongestFirst) {
    if (!b) {
      keep(a, t.max_length, t.from_left);
      return Status::ok();
    }
    // HF's three cases: nothing to cut (handled above), cut only the longer one, or cut both
    // to half of max_length (the second getting the odd token).
    size_t n1 = a.ids.size(), n2 = b->ids.size();
    const bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > t.max_length ? n1 : std::max(n1, t.max_length - n1);
    if (n1 + n2 > t.max_length) {
      n1 = t.max_length / 2;
      n2 = n1 + t.max_length % 2;
    }
    if (swap) std::swap(n1, n2);
    keep(a, n1, t.from_left);
    keep(*b, n2, t.from_left);
    return Status::ok();
  }
  Encoding* target = t.strategy == S::kOnlyFirst ? &a : b;
  if (!target) return invalid_argument("truncation strategy only_second needs a pair of sequences");
  if (target->ids.size() <= to_remove)
    return invalid_argument("truncation: the sequence to truncate is too short to reach max_length " +
                            std::to_string(t.max_length));
  keep(*target, target->ids.size() - to_remove, t.from_left);
  return Status::ok();
}

size_t padding_target(size_t longest, const PaddingSettings& p) {
  size_t n = p.fixed ? p.length : longest;
  if (p.multiple_of > 0 && n % p.multiple_of != 0) n += p.multiple_of - n % p.multiple_of;
  return n;
}

void pad(Encoding& e, size_t target, const PaddingSettings& p) {
  if (e.ids.size() >= target) return;
  const size_t n = target - e.ids.size();
  auto grow = [&](auto& v, const auto& value) {
    if (p.on_left) v.insert(v.begin(), n, value);
    else v.insert(v.end(), n, value);
  };
  grow(e.ids, p.pad_id);
  grow(e.type_ids, p.pad_type_id);
  grow(e.attention_mask, int64_t{0});
  grow(e.tokens, p.pad_token);
}

Encoding concatenate(std::vector<Encoding> parts) {
  if (parts.empty()) return {};
  Encoding out = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    auto append = [](auto& dst, auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    append(out.ids, parts[i].ids);
    append(out.type_ids, parts[i].type_ids);
    append(out.attention_mask, parts[i].attention_mask);
    append(out.tokens, parts[i].tokens);
  }
  return out;
}

}  // namespace ingot::text
