// Builds a TokenizerImpl from a tokenizer.json text or a BERT vocab.txt. nlohmann::json throws
// on type mismatches and missing keys; everything is caught here and becomes invalid_model.
#include <nlohmann/json.hpp>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace ingot::text {
namespace {

Status read_truncation(const nlohmann::json& j, TokenizerImpl& t) {
  if (j.is_null()) return Status::ok();
  TruncationSettings s;
  s.max_length = j.at("max_length").get<size_t>();
  const std::string strategy = j.value("strategy", std::string("LongestFirst"));
  using S = TruncationSettings::Strategy;
  if (strategy == "LongestFirst") s.strategy = S::kLongestFirst;
  else if (strategy == "OnlyFirst") s.strategy = S::kOnlyFirst;
  else if (strategy == "OnlySecond") s.strategy = S::kOnlySecond;
  else return invalid_model("truncation: unknown strategy \"" + strategy + "\"");
  s.from_left = j.value("direction", std::string("Right")) == "Left";
  t.saved_truncation = s;
  return Status::ok();
}

Status read_padding(const nlohmann::json& j, TokenizerImpl& t) {
  if (j.is_null()) return Status::ok();
  PaddingSettings p;
  const auto& strategy = j.at("strategy");
  if (strategy.is_object() && strategy.contains("Fixed")) {
    p.fixed = true;
    p.length = strategy.at("Fixed").get<size_t>();
  } else if (!(strategy.is_string() && strategy.get<std::string>() == "BatchLongest")) {
    return invalid_model("padding: unknown strategy " + strategy.dump());
  }
  p.on_left = j.value("direction", std::string("Right")) == "Left";
  if (j.contains("pad_to_multiple_of") && !j.at("pad_to_multiple_of").is_null())
    p.multiple_of = j.at("pad_to_multiple_of").get<size_t>();
  p.pad_id = j.value("pad_id", int64_t{0});
  p.pad_type_id = j.value("pad_type_id", int64_t{0});
  p.pad_token = j.value("pad_token", std::string("[PAD]"));
  t.saved_padding = p;
  t.pad_defaults = p;
  return Status::ok();
}

Expected<std::unique_ptr<TokenizerImpl>> parse(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_model("tokenizer.json: top level is not an object");
  auto t = std::make_unique<TokenizerImpl>();
  if (!j.contains("model")) return invalid_model("tokenizer.json: no \"model\"");
  INGOT_ASSIGN_OR_RETURN(t->model, model_from_json(j.at("model")));
  auto get = [&](const char* key) -> const nlohmann::json& {
    static const nlohmann::json kNull;
    return j.contains(key) ? j.at(key) : kNull;
  };
  INGOT_ASSIGN_OR_RETURN(t->normalizer, normalizer_from_json(get("normalizer")));
  INGOT_ASSIGN_OR_RETURN(t->pre_tokenizer, pre_tokenizer_from_json(get("pre_tokenizer")));
  INGOT_ASSIGN_OR_RETURN(t->post_processor, post_processor_from_json(get("post_processor")));
  INGOT_ASSIGN_OR_RETURN(t->decoder, decoder_from_json(get("decoder")));
  INGOT_RETURN_IF_ERROR(read_truncation(get("truncation"), *t));
  const auto& added = get("added_tokens");
  if (!added.is_null() && !added.is_array()) return invalid_model("tokenizer.json: \"added_tokens\" is not a list");
  for (const auto& a : added) {
    AddedToken tok;
    tok.id = a.at("id").get<int64_t>();
    tok.content = a.at("content").get<std::string>();
    if (!is_valid_utf8(tok.content)) return invalid_model("tokenizer.json: an added token is not valid UTF-8");
    tok.single_word = a.value("single_word", false);
    tok.lstrip = a.value("lstrip", false);
    tok.rstrip = a.value("rstrip", false);
    tok.special = a.value("special", false);
    tok.normalized = a.value("normalized", !tok.special);
    t->add_token(std::move(tok));
  }
  t->choose_pad_defaults();
  INGOT_RETURN_IF_ERROR(read_padding(get("padding"), *t));
  return t;
}

}  // namespace

Expected<std::unique_ptr<TokenizerImpl>> load_tokenizer_json(std::string_view json_text) {
  try {
    auto j = nlohmann::json::parse(json_text.begin(), json_text.end());
    return parse(j);
  } catch (const nlohmann::json::exception& e) {
    return invalid_model(std::string("tokenizer.json: ") + e.what());
  } catch (const std::exception& e) {
    return invalid_model(std::string("tokenizer.json: ") + e.what());
  }
}

// BertTokenizer's defaults: lowercase, strip accents, split CJK; [CLS] A [SEP] templates.
Expected<std::unique_ptr<TokenizerImpl>> load_bert_vocab_txt(const std::string& path) {
  INGOT_ASSIGN_OR_RETURN(Vocab vocab, read_vocab_txt(path));
  auto cls = vocab.find("[CLS]"), sep = vocab.find("[SEP]");
  if (!cls || !sep) return invalid_model("vocab.txt '" + path + "' has no [CLS] or [SEP] token");
  std::vector<AddedToken> specials;
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    if (auto id = vocab.find(s)) specials.push_back({*id, s, false, false, false, false, true});
  }
  auto t = std::make_unique<TokenizerImpl>();
  t->normalizer = make_bert_normalizer(BertNormalizerOptions{});
  t->pre_tokenizer = make_bert_pre_tokenizer();
  INGOT_ASSIGN_OR_RETURN(t->model, make_wordpiece(std::move(vocab), WordPieceOptions{}));
  t->post_processor = make_bert_template(*cls, *sep);
  t->decoder = make_wordpiece_decoder("##", true);
  for (auto& s : specials) t->add_token(std::move(s));
  t->choose_pad_defaults();
  return t;
}

}  // namespace ingot::text
