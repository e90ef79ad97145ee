// Normalizers: the text rewrites HF `tokenizers` applies before pre-tokenization (tokenizer.json
// "normalizer"). Texts are UTF-32 here so that per-character rules stay simple.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ingot/status.h"

namespace ingot::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::u32string& s) const = 0;
};

// BERT's BasicTokenizer cleaning, as HF's BertNormalizer does it.
struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  // unset: follows lowercase
  bool lowercase = true;
};
std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& opts);

// Builds a normalizer from its tokenizer.json object (null gives nullptr and ok). Supports
// BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents and Sequence.
Expected<std::unique_ptr<Normalizer>> normalizer_from_json(const nlohmann::json& j);

}  // namespace ingot::text
