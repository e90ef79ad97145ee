#include "text/normalizer.h"

#include <nlohmann/json.hpp>
#include <unicode/uchar.h>

#include "text/unicode.h"

namespace ingot::text {
namespace {

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const BertNormalizerOptions& o) : o_(o) {}

  void normalize(std::u32string& s) const override {
    std::u32string out;
    out.reserve(s.size() + 8);
    if (o_.clean_text) {
      // Drop NUL, U+FFFD and control/format/unassigned chars; every whitespace becomes ' '
      // (\t \n \r count as whitespace, not control).
      for (char32_t c : s) {
        bool ws = c == '\t' || c == '\n' || c == '\r' || is_white_space(c);
        if (ws) {
          out.push_back(' ');
        } else if (c != 0 && c != 0xFFFD && !is_other(c)) {
          out.push_back(c);
        }
      }
      s.swap(out);
      out.clear();
    }
    if (o_.handle_chinese_chars) {
      for (char32_t c : s) {
        if (is_chinese_char(c)) {
          out.push_back(' ');
          out.push_back(c);
          out.push_back(' ');
        } else {
          out.push_back(c);
        }
      }
      s.swap(out);
      out.clear();
    }
    if (o_.strip_accents.value_or(o_.lowercase)) {
      text::normalize(s, "NFD");
      for (char32_t c : s)
        if (!is_nonspacing_mark(c)) out.push_back(c);
      s.swap(out);
      out.clear();
    }
    if (o_.lowercase) {
      for (char32_t c : s) append_lowercase(out, c);
      s.swap(out);
    }
  }

 private:
  BertNormalizerOptions o_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::u32string& s) const override {
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : s) append_lowercase(out, c);
    s.swap(out);
  }
};

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(std::string form) : form_(std::move(form)) {}
  void normalize(std::u32string& s) const override { text::normalize(s, form_.c_str()); }

 private:
  std::string form_;
};

// HF's StripAccents removes every combining mark (Mn, Mc, Me); it does not decompose first.
class StripAccents final : public Normalizer {
 public:
  void normalize(std::u32string& s) const override {
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : s) {
      int8_t t = u_charType(static_cast<UChar32>(c));
      if (t != U_NON_SPACING_MARK && t != U_COMBINING_SPACING_MARK && t != U_ENCLOSING_MARK) out.push_back(c);
    }
    s.swap(out);
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::u32string& s) const override {
    for (const auto& n : steps_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& opts) {
  return std::make_unique<BertNormalizer>(opts);
}

// Called inside the loader's try block: nlohmann exceptions are caught there.
Expected<std::unique_ptr<Normalizer>> normalizer_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<Normalizer>();
  if (!j.is_object() || !j.contains("type")) return invalid_model("normalizer: expected an object with a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "BertNormalizer") {
    BertNormalizerOptions o;
    o.clean_text = j.value("clean_text", true);
    o.handle_chinese_chars = j.value("handle_chinese_chars", true);
    if (j.contains("strip_accents") && !j.at("strip_accents").is_null()) o.strip_accents = j.at("strip_accents").get<bool>();
    o.lowercase = j.value("lowercase", true);
    return make_bert_normalizer(o);
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<Lowercase>());
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
    return std::unique_ptr<Normalizer>(std::make_unique<UnicodeForm>(type));
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(std::make_unique<StripAccents>());
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& sub : j.at("normalizers")) {
      INGOT_ASSIGN_OR_RETURN(auto n, normalizer_from_json(sub));
      if (n) steps.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(std::make_unique<SequenceNormalizer>(std::move(steps)));
  }
  return unsupported("normalizer type \"" + type + "\" is not supported");
}

}  // namespace ingot::text
