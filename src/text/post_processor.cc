#include "text/post_processor.h"

#include <map>

#include <nlohmann/json.hpp>

namespace ingot::text {
namespace {

Encoding make_special(const std::vector<int64_t>& ids, const std::vector<std::string>& tokens, int64_t type_id) {
  Encoding e;
  e.ids = ids;
  e.tokens = tokens;
  e.type_ids.assign(ids.size(), type_id);
  e.attention_mask.assign(ids.size(), 1);
  return e;
}

void set_type_ids(Encoding& e, int64_t type_id) { e.type_ids.assign(e.ids.size(), type_id); }

struct SpecialToken {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
};

// A template piece: a sequence (A = 0, B = 1) or a named special token, with its type id.
struct Piece {
  bool is_sequence;
  int sequence;
  std::string special;
  int64_t type_id;
};

class TemplateProcessing final : public PostProcessor {
 public:
  TemplateProcessing(std::vector<Piece> single, std::vector<Piece> pair, std::map<std::string, SpecialToken> specials)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {}

  size_t added_tokens(bool is_pair) const override {
    size_t n = 0;
    for (const auto& p : is_pair ? pair_ : single_)
      if (!p.is_sequence) n += specials_.at(p.special).ids.size();
    return n;
  }

  std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const override {
    const auto& tpl = encodings.size() == 2 ? pair_ : single_;
    std::vector<Encoding> out;
    for (const auto& p : tpl) {
      if (p.is_sequence) {
        if (static_cast<size_t>(p.sequence) >= encodings.size()) continue;
        Encoding e = encodings[p.sequence];
        set_type_ids(e, p.type_id);  // even without special tokens, as HF does
        out.push_back(std::move(e));
      } else if (add_special_tokens) {
        const auto& s = specials_.at(p.special);
        out.push_back(make_special(s.ids, s.tokens, p.type_id));
      }
    }
    return out;
  }

 private:
  std::vector<Piece> single_, pair_;
  std::map<std::string, SpecialToken> specials_;
};

// <s> A </s> and <s> A </s></s> B </s>; RoBERTa sets every type id to 0.
class RobertaProcessing final : public PostProcessor {
 public:
  RobertaProcessing(SpecialToken cls, SpecialToken sep) : cls_(std::move(cls)), sep_(std::move(sep)) {}
  size_t added_tokens(bool is_pair) const override { return is_pair ? 4 : 2; }
  std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const override {
    for (auto& e : encodings) set_type_ids(e, 0);
    if (!add_special_tokens) return encodings;
    std::vector<Encoding> out;
    out.push_back(make_special(cls_.ids, cls_.tokens, 0));
    out.push_back(encodings[0]);
    out.push_back(make_special(sep_.ids, sep_.tokens, 0));
    if (encodings.size() == 2) {
      out.push_back(make_special(sep_.ids, sep_.tokens, 0));
      out.push_back(encodings[1]);
      out.push_back(make_special(sep_.ids, sep_.tokens, 0));
    }
    return out;
  }

 private:
  SpecialToken cls_, sep_;
};

// [CLS] A [SEP] and [CLS] A [SEP] B [SEP], B and its [SEP] of type 1.
class BertProcessing final : public PostProcessor {
 public:
  BertProcessing(SpecialToken cls, SpecialToken sep) : cls_(std::move(cls)), sep_(std::move(sep)) {}
  size_t added_tokens(bool is_pair) const override { return is_pair ? 3 : 2; }
  std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const override {
    if (!add_special_tokens) return encodings;
    std::vector<Encoding> out;
    out.push_back(make_special(cls_.ids, cls_.tokens, 0));
    out.push_back(encodings[0]);
    out.push_back(make_special(sep_.ids, sep_.tokens, 0));
    if (encodings.size() == 2) {
      out.push_back(encodings[1]);
      out.push_back(make_special(sep_.ids, sep_.tokens, 1));
    }
    return out;
  }

 private:
  SpecialToken cls_, sep_;
};

// ByteLevel only trims offsets, which ingot does not expose.
class NoOpProcessing final : public PostProcessor {
 public:
  size_t added_tokens(bool) const override { return 0; }
  std::vector<Encoding> process(std::vector<Encoding> encodings, bool) const override { return encodings; }
};

class SequenceProcessing final : public PostProcessor {
 public:
  explicit SequenceProcessing(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  size_t added_tokens(bool is_pair) const override {
    size_t n = 0;
    for (const auto& s : steps_) n += s->added_tokens(is_pair);
    return n;
  }
  std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const override {
    for (const auto& s : steps_) encodings = s->process(std::move(encodings), add_special_tokens);
    return encodings;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// ["</s>", 2] as RobertaProcessing / BertProcessing store their tokens.
SpecialToken token_pair(const nlohmann::json& j) {
  return {{j.at(1).get<int64_t>()}, {j.at(0).get<std::string>()}};
}

Expected<std::vector<Piece>> pieces_from_json(const nlohmann::json& j, const std::map<std::string, SpecialToken>& specials) {
  std::vector<Piece> out;
  for (const auto& p : j) {
    if (p.contains("Sequence")) {
      const auto& s = p.at("Sequence");
      const std::string id = s.at("id").get<std::string>();
      if (id != "A" && id != "B") return invalid_model("TemplateProcessing: sequence id must be A or B, got " + id);
      out.push_back({true, id == "A" ? 0 : 1, "", s.value("type_id", int64_t{0})});
    } else if (p.contains("SpecialToken")) {
      const auto& s = p.at("SpecialToken");
      const std::string id = s.at("id").get<std::string>();
      if (!specials.count(id)) return invalid_model("TemplateProcessing: special token \"" + id + "\" is not defined");
      out.push_back({false, 0, id, s.value("type_id", int64_t{0})});
    } else {
      return invalid_model("TemplateProcessing: a piece is neither Sequence nor SpecialToken");
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<PostProcessor> make_bert_template(int64_t cls_id, int64_t sep_id) {
  std::map<std::string, SpecialToken> specials{{"[CLS]", {{cls_id}, {"[CLS]"}}}, {"[SEP]", {{sep_id}, {"[SEP]"}}}};
  std::vector<Piece> single{{false, 0, "[CLS]", 0}, {true, 0, "", 0}, {false, 0, "[SEP]", 0}};
  std::vector<Piece> pair{{false, 0, "[CLS]", 0}, {true, 0, "", 0}, {false, 0, "[SEP]", 0},
                          {true, 1, "", 1},       {false, 0, "[SEP]", 1}};
  return std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials));
}

// Called inside the loader's try block: nlohmann exceptions are caught there.
Expected<std::unique_ptr<PostProcessor>> post_processor_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<PostProcessor>();
  if (!j.is_object() || !j.contains("type")) return invalid_model("post_processor: expected an object with a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "TemplateProcessing") {
    std::map<std::string, SpecialToken> specials;
    for (auto it = j.at("special_tokens").begin(); it != j.at("special_tokens").end(); ++it) {
      SpecialToken s{it.value().at("ids").get<std::vector<int64_t>>(), it.value().at("tokens").get<std::vector<std::string>>()};
      if (s.ids.size() != s.tokens.size()) return invalid_model("TemplateProcessing: \"" + it.key() + "\" has unequal ids and tokens");
      specials[it.key()] = std::move(s);
    }
    INGOT_ASSIGN_OR_RETURN(auto single, pieces_from_json(j.at("single"), specials));
    INGOT_ASSIGN_OR_RETURN(auto pair, pieces_from_json(j.at("pair"), specials));
    return std::unique_ptr<PostProcessor>(std::make_unique<TemplateProcessing>(std::move(single), std::move(pair), std::move(specials)));
  }
  if (type == "RobertaProcessing")
    return std::unique_ptr<PostProcessor>(std::make_unique<RobertaProcessing>(token_pair(j.at("cls")), token_pair(j.at("sep"))));
  if (type == "BertProcessing")
    return std::unique_ptr<PostProcessor>(std::make_unique<BertProcessing>(token_pair(j.at("cls")), token_pair(j.at("sep"))));
  if (type == "ByteLevel") return std::unique_ptr<PostProcessor>(std::make_unique<NoOpProcessing>());
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const auto& sub : j.at("processors")) {
      INGOT_ASSIGN_OR_RETURN(auto p, post_processor_from_json(sub));
      if (p) steps.push_back(std::move(p));
    }
    return std::unique_ptr<PostProcessor>(std::make_unique<SequenceProcessing>(std::move(steps)));
  }
  return unsupported("post_processor type \"" + type + "\" is not supported");
}

}  // namespace ingot::text
