#include "text/decoder.h"

#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/unicode.h"

namespace ingot::text {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  if (pos == 0) return;
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// HF's wordpiece::cleanup: undo the spaces BERT's tokenization put before punctuation.
void cleanup(std::string& s) {
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},           {" ,", ","},   {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_all(s, from, to);
}

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
        else t = " " + t;
      }
      if (cleanup_) cleanup(t);
    }
    return tokens;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// Tokens whose every code point is a byte stand-in become those bytes; any other token (an
// added token such as "<|endoftext|>" written plainly) keeps its UTF-8 bytes.
class ByteLevelDecoder final : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::string mine;
      bool all = true;
      for (char32_t c : to_u32(t)) {
        auto b = char_to_byte(c);
        if (!b) {
          all = false;
          break;
        }
        mine += static_cast<char>(*b);
      }
      bytes += all ? mine : t;
    }
    return {utf8_lossy(bytes)};
  }
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& d : steps_) tokens = d->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup) {
  return std::make_unique<WordPieceDecoder>(std::move(prefix), cleanup);
}

// Called inside the loader's try block: nlohmann exceptions are caught there.
Expected<std::unique_ptr<Decoder>> decoder_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<Decoder>();
  if (!j.is_object() || !j.contains("type")) return invalid_model("decoder: expected an object with a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "WordPiece") return make_wordpiece_decoder(j.value("prefix", std::string("##")), j.value("cleanup", true));
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDecoder>());
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& sub : j.at("decoders")) {
      INGOT_ASSIGN_OR_RETURN(auto d, decoder_from_json(sub));
      if (d) steps.push_back(std::move(d));
    }
    return std::unique_ptr<Decoder>(std::make_unique<SequenceDecoder>(std::move(steps)));
  }
  return unsupported("decoder type \"" + type + "\" is not supported");
}

}  // namespace ingot::text
