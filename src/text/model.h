// Tokenization models: turn one pre-tokenized word into vocabulary tokens. WordPiece (BERT) and
// BPE (GPT-2 / RoBERTa and friends) are supported, with HF `tokenizers` semantics.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ingot/status.h"

namespace ingot::text {

struct Token {
  int64_t id;
  std::string value;
};

// token ↔ id, both ways.
class Vocab {
 public:
  void add(std::string token, int64_t id) {
    by_id_[id] = token;
    by_token_[std::move(token)] = id;
  }
  std::optional<int64_t> find(const std::string& token) const {
    auto it = by_token_.find(token);
    return it == by_token_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  const std::string* token(int64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second;
  }
  size_t size() const { return by_token_.size(); }

 private:
  std::unordered_map<std::string, int64_t> by_token_;
  std::unordered_map<int64_t, std::string> by_id_;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of one word (UTF-8, non-empty) to `out`.
  virtual Status tokenize(const std::string& word, std::vector<Token>& out) const = 0;
  virtual const Vocab& vocab() const = 0;
};

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
};
Expected<std::unique_ptr<Model>> make_wordpiece(Vocab vocab, const WordPieceOptions& opts);
// A BERT vocab.txt: one token per line, the id is the line number.
Expected<Vocab> read_vocab_txt(const std::string& path);

// The "model" object of tokenizer.json (WordPiece or BPE).
Expected<std::unique_ptr<Model>> model_from_json(const nlohmann::json& j);
Expected<std::unique_ptr<Model>> bpe_from_json(const nlohmann::json& j);
Expected<std::unique_ptr<Model>> wordpiece_from_json(const nlohmann::json& j);
// Reads {"token": id, ...}.
Expected<Vocab> vocab_from_json(const nlohmann::json& j);

}  // namespace ingot::text
