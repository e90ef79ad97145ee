#include "text/added_vocabulary.h"

#include <algorithm>

#include "text/unicode.h"

namespace ingot::text {
namespace {

// Byte offset of the code point ending at byte `end` of valid UTF-8 `s` (end > 0).
size_t char_start_before(std::string_view s, size_t end) {
  size_t k = end - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return k;
}
char32_t char_before(std::string_view s, size_t end) {
  size_t k = char_start_before(s, end);
  return to_u32(s.substr(k, end - k))[0];
}
size_t char_len_at(std::string_view s, size_t begin) {
  size_t k = begin + 1;
  while (k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) ++k;
  return k - begin;
}
char32_t char_at(std::string_view s, size_t begin) { return to_u32(s.substr(begin, char_len_at(s, begin)))[0]; }

}  // namespace

void AddedVocabulary::add(AddedToken token, std::string normalized_content) {
  auto existing = by_content_.find(token.content);
  size_t index;
  if (existing != by_content_.end()) {
    index = existing->second;
    tokens_[index] = std::move(token);
  } else {
    index = tokens_.size();
    tokens_.push_back(std::move(token));
  }
  const AddedToken& t = tokens_[index];
  by_content_[t.content] = index;
  by_id_[t.id] = index;
  auto& patterns = t.normalized ? normalized_patterns_ : raw_patterns_;
  const std::string& text = t.normalized ? normalized_content : t.content;
  if (text.empty()) return;
  patterns.push_back({text, index});
  // Longest first, so the first pattern matching at a position is the leftmost-longest match.
  std::stable_sort(patterns.begin(), patterns.end(),
                   [](const Pattern& a, const Pattern& b) { return a.text.size() > b.text.size(); });
}

std::vector<Segment> AddedVocabulary::split(std::string_view s, bool normalized_tokens) const {
  const auto& patterns = normalized_tokens ? normalized_patterns_ : raw_patterns_;
  std::vector<Segment> out;
  auto push_text = [&](size_t b, size_t e) {
    if (e > b) out.push_back({std::string(s.substr(b, e - b)), std::nullopt});
  };
  size_t start_offset = 0;  // end of the previous match (after rstrip)
  size_t pos = 0;           // where the search for the next match resumes
  while (!patterns.empty() && pos < s.size()) {
    // Leftmost-longest match at or after `pos`, on character boundaries.
    const Pattern* hit = nullptr;
    size_t at = pos;
    for (; at < s.size() && !hit; at += char_len_at(s, at)) {
      for (const auto& p : patterns) {
        if (s.compare(at, p.text.size(), p.text) == 0) {
          hit = &p;
          break;
        }
      }
      if (hit) break;
    }
    if (!hit) break;
    size_t start = at, stop = at + hit->text.size();
    pos = stop;  // the automaton resumes after the match, kept or discarded
    const AddedToken& t = tokens_[hit->token_index];
    if (t.single_word) {
      bool start_ok = start == 0 || !is_word_char(char_before(s, start));
      bool stop_ok = stop == s.size() || !is_word_char(char_at(s, stop));
      if (!start_ok || !stop_ok) continue;
    }
    if (t.lstrip) {
      size_t b = start;
      while (b > 0 && is_white_space(char_before(s, b))) b = char_start_before(s, b);
      start = std::max(b, start_offset);
    }
    if (t.rstrip) {
      while (stop < s.size() && is_white_space(char_at(s, stop))) stop += char_len_at(s, stop);
    }
    start = std::max(start, start_offset);  // never overlap a previous rstrip
    push_text(start_offset, start);
    out.push_back({std::string(s.substr(start, stop - start)), t.id});
    start_offset = stop;
  }
  push_text(start_offset, s.size());
  return out;
}

std::optional<int64_t> AddedVocabulary::token_to_id(const std::string& content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? std::nullopt : std::optional<int64_t>(tokens_[it->second].id);
}

const AddedToken* AddedVocabulary::by_id(int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

bool AddedVocabulary::is_special(const std::string& content) const {
  auto it = by_content_.find(content);
  return it != by_content_.end() && tokens_[it->second].special;
}

}  // namespace ingot::text
