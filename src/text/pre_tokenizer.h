// Pre-tokenizers: split normalized text into the words the model tokenizes one by one
// (tokenizer.json "pre_tokenizer"). Supported: BertPreTokenizer, ByteLevel, WhitespaceSplit
// and Sequence of those.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ingot/status.h"

namespace ingot::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by its sub-pieces; empty pieces are dropped, as HF does.
  virtual Status split(std::vector<std::u32string>& pieces) const = 0;
};

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
// GPT-2's byte-level pre-tokenizer: optional leading space, the GPT-2 regex, then every byte
// of a piece mapped through bytes_to_unicode.
Expected<std::unique_ptr<PreTokenizer>> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);

// null gives nullptr and ok.
Expected<std::unique_ptr<PreTokenizer>> pre_tokenizer_from_json(const nlohmann::json& j);

}  // namespace ingot::text
