#include "text/pre_tokenizer.h"

#include <nlohmann/json.hpp>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include "text/byte_level.h"
#include "text/unicode.h"

namespace ingot::text {
namespace {

// Splits on whitespace (removed) and isolates every punctuation character.
class BertPreTokenizer final : public PreTokenizer {
 public:
  Status split(std::vector<std::u32string>& pieces) const override {
    std::vector<std::u32string> out;
    for (const auto& p : pieces) {
      std::u32string cur;
      for (char32_t c : p) {
        if (is_white_space(c)) {
          if (!cur.empty()) out.push_back(std::move(cur));
          cur.clear();
        } else if (is_bert_punctuation(c)) {
          if (!cur.empty()) out.push_back(std::move(cur));
          cur.clear();
          out.emplace_back(1, c);
        } else {
          cur.push_back(c);
        }
      }
      if (!cur.empty()) out.push_back(std::move(cur));
    }
    pieces.swap(out);
    return Status::ok();
  }
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  Status split(std::vector<std::u32string>& pieces) const override {
    std::vector<std::u32string> out;
    for (const auto& p : pieces) {
      std::u32string cur;
      for (char32_t c : p) {
        if (is_white_space(c)) {
          if (!cur.empty()) out.push_back(std::move(cur));
          cur.clear();
        } else {
          cur.push_back(c);
        }
      }
      if (!cur.empty()) out.push_back(std::move(cur));
    }
    pieces.swap(out);
    return Status::ok();
  }
};

// GPT-2's pattern. HF runs it with Oniguruma, whose \s / \S are the White_Space property;
// ICU's \s is [\t\n\f\r\p{Z}] (no U+000B, no U+0085), so spell the property out.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+"
    "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<icu::RegexPattern> re)
      : add_prefix_space_(add_prefix_space), re_(std::move(re)) {}

  Status split(std::vector<std::u32string>& pieces) const override {
    std::vector<std::u32string> out;
    std::string bytes;
    auto emit = [&](const icu::UnicodeString& part) {
      if (part.isEmpty()) return;
      std::string utf8;
      part.toUTF8String(utf8);
      bytes.clear();
      append_byte_level(bytes, utf8);
      out.push_back(to_u32(bytes));
    };
    for (auto& p : pieces) {
      if (p.empty()) continue;
      if (add_prefix_space_ && p[0] != U' ') p.insert(p.begin(), U' ');
      icu::UnicodeString us = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(p.data()),
                                                            static_cast<int32_t>(p.size()));
      if (!re_) {
        emit(us);
        continue;
      }
      // A matcher per piece: RegexPattern is shareable across threads, matchers are not.
      UErrorCode err = U_ZERO_ERROR;
      std::unique_ptr<icu::RegexMatcher> m(re_->matcher(us, err));
      if (U_FAILURE(err)) return internal_error(std::string("ICU regex matcher: ") + u_errorName(err));
      int32_t last = 0;
      while (m->find(err) && U_SUCCESS(err)) {
        int32_t s = m->start(err), e = m->end(err);
        if (s > last) emit(us.tempSubStringBetween(last, s));  // gaps are kept (Isolated)
        emit(us.tempSubStringBetween(s, e));
        last = e;
      }
      if (U_FAILURE(err)) return internal_error(std::string("ICU regex: ") + u_errorName(err));
      if (last < us.length()) emit(us.tempSubStringBetween(last));
    }
    pieces.swap(out);
    return Status::ok();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<icu::RegexPattern> re_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  Status split(std::vector<std::u32string>& pieces) const override {
    for (const auto& s : steps_) INGOT_RETURN_IF_ERROR(s->split(pieces));
    return Status::ok();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() { return std::make_unique<BertPreTokenizer>(); }

Expected<std::unique_ptr<PreTokenizer>> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  std::unique_ptr<icu::RegexPattern> re;
  if (use_regex) {
    UErrorCode err = U_ZERO_ERROR;
    UParseError pe;
    re.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(kGpt2Pattern), 0, pe, err));
    if (U_FAILURE(err)) return internal_error(std::string("ICU could not compile the GPT-2 regex: ") + u_errorName(err));
  }
  return std::unique_ptr<PreTokenizer>(std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, std::move(re)));
}

// Called inside the loader's try block: nlohmann exceptions are caught there.
Expected<std::unique_ptr<PreTokenizer>> pre_tokenizer_from_json(const nlohmann::json& j) {
  if (j.is_null()) return std::unique_ptr<PreTokenizer>();
  if (!j.is_object() || !j.contains("type")) return invalid_model("pre_tokenizer: expected an object with a \"type\"");
  const std::string type = j.at("type").get<std::string>();
  if (type == "BertPreTokenizer") return make_bert_pre_tokenizer();
  if (type == "WhitespaceSplit") return std::unique_ptr<PreTokenizer>(std::make_unique<WhitespaceSplit>());
  if (type == "ByteLevel") return make_byte_level_pre_tokenizer(j.value("add_prefix_space", true), j.value("use_regex", true));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& sub : j.at("pretokenizers")) {
      INGOT_ASSIGN_OR_RETURN(auto p, pre_tokenizer_from_json(sub));
      if (p) steps.push_back(std::move(p));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<SequencePreTokenizer>(std::move(steps)));
  }
  return unsupported("pre_tokenizer type \"" + type + "\" is not supported");
}

}  // namespace ingot::text
