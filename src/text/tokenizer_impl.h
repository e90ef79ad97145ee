// The parts of a Tokenizer, in HF's pipeline order: added tokens are cut out of the raw text,
// the rest is normalized, pre-tokenized into words and tokenized by the model; then
// truncation, the post-processor (special tokens, type ids) and padding.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "text/added_vocabulary.h"
#include "text/decoder.h"
#include "text/encoding_ops.h"
#include "text/model.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pre_tokenizer.h"
#include "text/tokenizer.h"

namespace ingot::text {

class TokenizerImpl {
 public:
  std::unique_ptr<Normalizer> normalizer;          // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;     // may be null
  std::unique_ptr<Model> model;                    // never null
  std::unique_ptr<PostProcessor> post_processor;   // may be null
  std::unique_ptr<Decoder> decoder;                // may be null
  AddedVocabulary added;
  std::optional<TruncationSettings> saved_truncation;  // tokenizer.json "truncation"
  std::optional<PaddingSettings> saved_padding;        // tokenizer.json "padding"
  PaddingSettings pad_defaults;                        // pad token when the file names none

  // HF tokenizes whole words only until it has max_tokens of them when truncation is on.
  struct TokenLimit {
    size_t max_tokens;
    bool from_left;
  };
  // One sequence through added tokens, normalizer, pre-tokenizer and model; every token gets
  // `type_id` (0 for the first sequence, 1 for the pair).
  Expected<Encoding> encode_sequence(std::string_view text, int64_t type_id, std::optional<TokenLimit> limit) const;
  // Truncation and post-processing, without padding.
  Expected<Encoding> encode_unpadded(std::string_view text, std::optional<std::string_view> pair,
                                     const EncodeOptions& options) const;
  // The padding `options` ask for, if any.
  std::optional<PaddingSettings> padding_for(const EncodeOptions& options) const;

  // Adds an added token, normalizing its pattern if it is a normalized one.
  void add_token(AddedToken t);
  // Picks the pad token used when tokenizer.json has no "padding".
  void choose_pad_defaults();
};

// tokenizer_load.cc
Expected<std::unique_ptr<TokenizerImpl>> load_tokenizer_json(std::string_view json_text);
Expected<std::unique_ptr<TokenizerImpl>> load_bert_vocab_txt(const std::string& path);

}  // namespace ingot::text
