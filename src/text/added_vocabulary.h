// Added tokens (tokenizer.json "added_tokens"): strings matched as whole tokens before the model
// sees the text. Tokens with normalized=false (all special tokens, usually) are found in the raw
// text; normalized ones in the normalized text. Matching is leftmost-longest, then HF's
// single_word / lstrip / rstrip rules apply.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ingot::text {

struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A piece of the input: either an added token (id set) or text still to tokenize.
struct Segment {
  std::string text;  // UTF-8
  std::optional<int64_t> id;
};

class AddedVocabulary {
 public:
  // `normalized_content` is the content as the normalizer rewrites it (used for normalized
  // tokens); pass content itself when there is no normalizer.
  void add(AddedToken token, std::string normalized_content);

  // Splits `text` on the raw (normalized=false) or normalized tokens. Empty pieces are dropped.
  std::vector<Segment> split(std::string_view text, bool normalized_tokens) const;

  std::optional<int64_t> token_to_id(const std::string& content) const;
  const AddedToken* by_id(int64_t id) const;
  bool is_special(const std::string& content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Pattern {
    std::string text;
    size_t token_index;
  };
  std::vector<AddedToken> tokens_;
  std::vector<Pattern> raw_patterns_, normalized_patterns_;  // longest first
  std::unordered_map<std::string, size_t> by_content_;
  std::unordered_map<int64_t, size_t> by_id_;
};

}  // namespace ingot::text
