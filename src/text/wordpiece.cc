// WordPiece: greedy longest-match-first over each word, continuation pieces carrying "##";
// a word with an unmatchable remainder, or longer than max_input_chars_per_word, is [UNK].
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/model.h"

namespace ingot::text {
namespace {

size_t utf8_char_count(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Byte length of the last code point of non-empty valid UTF-8 `s`.
size_t last_char_len(std::string_view s) {
  size_t k = s.size() - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return s.size() - k;
}

class WordPiece final : public Model {
 public:
  WordPiece(Vocab vocab, WordPieceOptions o, int64_t unk_id) : vocab_(std::move(vocab)), o_(std::move(o)), unk_id_(unk_id) {}

  Status tokenize(const std::string& word, std::vector<Token>& out) const override {
    if (utf8_char_count(word) > o_.max_input_chars_per_word) {
      out.push_back({unk_id_, o_.unk_token});
      return Status::ok();
    }
    size_t first = out.size();
    std::string_view w(word);
    size_t start = 0;
    std::string candidate;
    while (start < w.size()) {
      size_t end = w.size();
      bool found = false;
      while (start < end) {
        std::string_view sub = w.substr(start, end - start);
        candidate.clear();
        if (start > 0) candidate = o_.continuing_subword_prefix;
        candidate.append(sub);
        if (auto id = vocab_.find(candidate)) {
          out.push_back({*id, candidate});
          found = true;
          break;
        }
        end -= last_char_len(sub);
      }
      if (!found) {
        out.resize(first);
        out.push_back({unk_id_, o_.unk_token});
        return Status::ok();
      }
      start = end;
    }
    return Status::ok();
  }

  const Vocab& vocab() const override { return vocab_; }

 private:
  Vocab vocab_;
  WordPieceOptions o_;
  int64_t unk_id_;
};

}  // namespace

Expected<std::unique_ptr<Model>> make_wordpiece(Vocab vocab, const WordPieceOptions& opts) {
  auto unk = vocab.find(opts.unk_token);
  if (!unk) return invalid_model("WordPiece: unk_token \"" + opts.unk_token + "\" is not in the vocabulary");
  return std::unique_ptr<Model>(std::make_unique<WordPiece>(std::move(vocab), opts, *unk));
}

Expected<Vocab> read_vocab_txt(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open vocabulary file '" + path + "'");
  Vocab vocab;
  std::string line;
  int64_t id = 0;
  while (std::getline(f, line)) {
    // HF trims trailing whitespace (and so a Windows '\r') from each line.
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t' || line.back() == '\n'))
      line.pop_back();
    vocab.add(line, id++);
  }
  if (f.bad()) return io_error("error reading vocabulary file '" + path + "'");
  if (vocab.size() == 0) return invalid_model("vocabulary file '" + path + "' is empty");
  return vocab;
}

Expected<Vocab> vocab_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_model("model.vocab: expected an object of token → id");
  Vocab vocab;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0)
      return invalid_model("model.vocab: id of \"" + it.key() + "\" is not a non-negative integer");
    vocab.add(it.key(), it.value().get<int64_t>());
  }
  return vocab;
}

Expected<std::unique_ptr<Model>> wordpiece_from_json(const nlohmann::json& j) {
  INGOT_ASSIGN_OR_RETURN(Vocab vocab, vocab_from_json(j.at("vocab")));
  WordPieceOptions o;
  o.unk_token = j.value("unk_token", std::string("[UNK]"));
  o.continuing_subword_prefix = j.value("continuing_subword_prefix", std::string("##"));
  o.max_input_chars_per_word = j.value("max_input_chars_per_word", size_t{100});
  return make_wordpiece(std::move(vocab), o);
}

Expected<std::unique_ptr<Model>> model_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_model("tokenizer.json: \"model\" is missing or not an object");
  std::string type = j.value("type", std::string());
  // Old files omit "type": infer it the way HF's untagged deserialisation would.
  if (type.empty()) {
    if (j.contains("merges")) type = "BPE";
    else if (j.contains("continuing_subword_prefix") || j.contains("max_input_chars_per_word")) type = "WordPiece";
  }
  if (type == "BPE") return bpe_from_json(j);
  if (type == "WordPiece") return wordpiece_from_json(j);
  if (type.empty()) return invalid_model("tokenizer.json: model has no \"type\" and is not recognisable");
  return unsupported("tokenizer model type \"" + type + "\" is not supported (WordPiece and BPE are)");
}

}  // namespace ingot::text
