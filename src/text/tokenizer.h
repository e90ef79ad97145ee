// Text tokenizers that reproduce Hugging Face `tokenizers` exactly: a tokenizer.json (WordPiece
// or byte-level BPE models, their normalizers, pre-tokenizers, post-processors and decoders,
// added/special tokens) or a BERT vocab.txt (read with BertTokenizer's default settings).
//
//   auto tok = ingot::text::Tokenizer::from_file("tokenizer.json");
//   auto enc = (*tok)->encode("Hello world", std::nullopt, {});   // enc->ids, enc->attention_mask
//   auto text = (*tok)->decode(enc->ids);
//
// Every method is const and safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingot/status.h"

namespace ingot::text {

struct Encoding {
  std::vector<int64_t> ids, type_ids, attention_mask;
  std::vector<std::string> tokens;
};

struct EncodeOptions {
  // Longest result, special tokens included; pairs are cut longest-first. As in HF 0.23, each
  // sequence is first tokenized only up to this many tokens (whole words), which decides
  // which one of a pair counts as the longer.
  std::optional<size_t> truncation_max_length;
  enum class Padding { kNone, kLongest, kFixed } padding = Padding::kNone;
  size_t pad_to = 0;  // for kFixed
  bool add_special_tokens = true;
  // When true, a tokenizer.json's own "truncation" / "padding" apply where the fields above
  // are left unset (truncation_max_length empty, padding kNone).
  bool use_saved_settings = true;
};

class TokenizerImpl;

class Tokenizer {
 public:
  // A tokenizer.json, or a BERT vocab.txt (any file whose first non-blank byte is not '{').
  static Expected<std::unique_ptr<Tokenizer>> from_file(const std::string& path);
  // The same from the text of a tokenizer.json.
  static Expected<std::unique_ptr<Tokenizer>> from_json_string(std::string_view json);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  Expected<Encoding> encode(std::string_view text, std::optional<std::string_view> pair,
                            const EncodeOptions& options) const;
  // pairs, when given, must be as long as texts. kLongest pads to the longest of the batch.
  Expected<std::vector<Encoding>> encode_batch(const std::vector<std::string>& texts,
                                               const std::vector<std::string>* pairs,
                                               const EncodeOptions& options) const;
  // Ids outside the vocabulary are an error (HF silently drops them).
  Expected<std::string> decode(const std::vector<int64_t>& ids, bool skip_special_tokens = true) const;

  std::optional<int64_t> token_to_id(std::string_view token) const;
  // "" for an unknown id.
  std::string id_to_token(int64_t id) const;
  // Model vocabulary plus added tokens not already in it (HF's get_vocab_size(true)).
  size_t vocab_size() const;

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerImpl> impl);
  std::unique_ptr<TokenizerImpl> impl_;
};

}  // namespace ingot::text
