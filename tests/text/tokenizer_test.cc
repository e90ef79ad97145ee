// Tokenizers (src/text) against Hugging Face `tokenizers` 0.23.2: every case of the reference
// files made by scripts/make_tokenizer_fixtures.py must give exactly HF's ids, type ids,
// attention masks, tokens and decoded text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

using ingot::text::EncodeOptions;
using ingot::text::Encoding;
using ingot::text::Tokenizer;
using nlohmann::json;

namespace {

std::string fixture(const std::string& name) { return std::string(INGOT_SOURCE_DIR) + "/tests/text/" + name; }

std::unique_ptr<Tokenizer> load(const std::string& name) {
  auto t = Tokenizer::from_file(fixture(name));
  EXPECT_TRUE(t.has_value()) << name << ": " << t.status().message();
  return t.has_value() ? std::move(t).value() : nullptr;
}

std::vector<json> read_jsonl(const std::string& name) {
  std::ifstream f(fixture(name));
  std::vector<json> out;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

template <class T>
std::string show(const std::vector<T>& v) {
  return json(v).dump();
}

struct Tally {
  size_t cases = 0, id_mismatches = 0, token_mismatches = 0, decode_mismatches = 0, errors = 0;
  std::vector<std::string> first;
  void note(std::string what) {
    if (first.size() < 5) first.push_back(std::move(what));
  }
};

// Compares ids, type ids and attention mask (as one "id" mismatch) and tokens.
void compare(Tally& t, const std::string& where, const Encoding& got, const json& want_ids, const json& want_types,
             const json& want_mask, const json* want_tokens) {
  auto ids = want_ids.get<std::vector<int64_t>>();
  auto types = want_types.get<std::vector<int64_t>>();
  auto mask = want_mask.get<std::vector<int64_t>>();
  if (got.ids != ids || got.type_ids != types || got.attention_mask != mask) {
    ++t.id_mismatches;
    t.note(where + "\n  want ids " + show(ids) + " types " + show(types) + " mask " + show(mask) + "\n  got  ids " +
           show(got.ids) + " types " + show(got.type_ids) + " mask " + show(got.attention_mask) +
           "\n  got tokens " + show(got.tokens));
  } else if (want_tokens && got.tokens != want_tokens->get<std::vector<std::string>>()) {
    ++t.token_mismatches;
    t.note(where + "\n  want tokens " + want_tokens->dump() + "\n  got  tokens " + show(got.tokens));
  }
}

Tally run_reference(const Tokenizer& tok, const std::string& file) {
  Tally t;
  int line = 0;
  for (const json& c : read_jsonl(file)) {
    ++line;
    ++t.cases;
    const std::string kind = c.at("kind");
    const std::string where = file + ":" + std::to_string(line) + " (" + kind + ") " + c.dump().substr(0, 160);
    EncodeOptions opts;
    if (c.contains("truncation")) opts.truncation_max_length = c.at("truncation").get<size_t>();
    if (kind == "batch") {
      opts.padding = EncodeOptions::Padding::kLongest;
      auto texts = c.at("texts").get<std::vector<std::string>>();
      auto got = tok.encode_batch(texts, nullptr, opts);
      if (!got) {
        ++t.errors;
        t.note(where + ": " + got.status().message());
        continue;
      }
      if (got->size() != texts.size()) {
        ++t.id_mismatches;
        t.note(where + ": wrong batch size");
        continue;
      }
      for (size_t i = 0; i < texts.size(); ++i)
        compare(t, where + " item " + std::to_string(i), (*got)[i], c.at("ids")[i], c.at("type_ids")[i],
                c.at("attention_mask")[i], nullptr);
      continue;
    }
    std::string text = c.at("text"), pair_text;
    std::optional<std::string_view> pair;
    if (kind == "pair") {
      pair_text = c.at("pair").get<std::string>();
      pair = pair_text;
    }
    auto got = tok.encode(text, pair, opts);
    if (!got) {
      ++t.errors;
      t.note(where + ": " + got.status().message());
      continue;
    }
    compare(t, where, *got, c.at("ids"), c.at("type_ids"), c.at("attention_mask"), &c.at("tokens"));
    auto decoded = tok.decode(c.at("ids").get<std::vector<int64_t>>(), true);
    if (!decoded || *decoded != c.at("decoded").get<std::string>()) {
      ++t.decode_mismatches;
      t.note(where + "\n  want decoded " + c.at("decoded").dump() + "\n  got  " +
             (decoded ? json(*decoded).dump() : decoded.status().message()));
    }
  }
  return t;
}

void expect_exact(const std::string& tokenizer_file, const std::string& reference_file) {
  auto tok = load(tokenizer_file);
  ASSERT_NE(tok, nullptr);
  Tally t = run_reference(*tok, reference_file);
  std::string first;
  for (const auto& s : t.first) first += "\n" + s;
  EXPECT_GT(t.cases, 4000u);
  EXPECT_EQ(t.id_mismatches + t.token_mismatches + t.decode_mismatches + t.errors, 0u)
      << reference_file << ": " << t.cases << " cases, " << t.id_mismatches << " id/type/mask mismatches, "
      << t.token_mismatches << " token mismatches, " << t.decode_mismatches << " decode mismatches, " << t.errors
      << " errors; first:" << first;
}

std::string write_temp(const std::string& content, const std::string& suffix) {
  char name[] = "/tmp/ingot_tokenizer_testXXXXXX";
  int fd = mkstemp(name);
  close(fd);
  std::string path = std::string(name) + suffix;
  std::rename(name, path.c_str());
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace

TEST(TokenizerReference, WordPieceMatchesHuggingFace) {
  expect_exact("wordpiece.tokenizer.json", "wordpiece.reference.jsonl");
}

TEST(TokenizerReference, RobertaBpeMatchesHuggingFace) {
  expect_exact("bpe_roberta.tokenizer.json", "bpe_roberta.reference.jsonl");
}

TEST(TokenizerReference, Gpt2BpeMatchesHuggingFace) {
  expect_exact("bpe_gpt2.tokenizer.json", "bpe_gpt2.reference.jsonl");
}

// vocab.txt read with BertTokenizer's defaults must tokenize exactly like the tokenizer.json
// (which was trained with those settings).
TEST(TokenizerReference, VocabTxtMatchesTokenizerJson) {
  auto from_json = load("wordpiece.tokenizer.json");
  auto from_txt = load("wordpiece.vocab.txt");
  ASSERT_NE(from_json, nullptr);
  ASSERT_NE(from_txt, nullptr);
  EXPECT_EQ(from_json->vocab_size(), from_txt->vocab_size());
  size_t n = 0, mismatches = 0;
  std::string first;
  for (const json& c : read_jsonl("corpus.jsonl")) {
    const std::string text = c.get<std::string>();
    auto a = from_json->encode(text, std::nullopt, {});
    auto b = from_txt->encode(text, std::nullopt, {});
    ASSERT_TRUE(a.has_value() && b.has_value());
    ++n;
    if (a->ids != b->ids || a->type_ids != b->type_ids) {
      if (mismatches++ == 0) first = text;
    }
    auto da = from_json->decode(a->ids), db = from_txt->decode(b->ids);
    ASSERT_TRUE(da.has_value() && db.has_value());
    EXPECT_EQ(*da, *db);
  }
  EXPECT_GT(n, 3000u);
  EXPECT_EQ(mismatches, 0u) << "first: " << first;
}

TEST(TokenizerOptions, PaddingTruncationAndSpecialTokens) {
  auto tok = load("wordpiece.tokenizer.json");
  ASSERT_NE(tok, nullptr);
  EncodeOptions fixed;
  fixed.padding = EncodeOptions::Padding::kFixed;
  fixed.pad_to = 16;
  auto e = tok->encode("hello world", std::string_view("second one"), fixed);
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->ids.size(), 16u);
  EXPECT_EQ(e->ids.front(), *tok->token_to_id("[CLS]"));
  EXPECT_EQ(e->ids.back(), *tok->token_to_id("[PAD]"));
  EXPECT_EQ(e->attention_mask.back(), 0);
  EXPECT_EQ(e->type_ids.back(), 0);
  EXPECT_EQ(e->tokens.back(), "[PAD]");

  EncodeOptions raw;
  raw.add_special_tokens = false;
  auto r = tok->encode("hello", std::nullopt, raw);
  ASSERT_TRUE(r.has_value());
  for (auto id : r->ids) EXPECT_NE(id, *tok->token_to_id("[CLS]"));

  EncodeOptions too_short;
  too_short.truncation_max_length = 1;  // less than [CLS] + [SEP]
  auto bad = tok->encode("hello", std::nullopt, too_short);
  EXPECT_FALSE(bad.has_value());

  EXPECT_EQ(tok->id_to_token(*tok->token_to_id("[SEP]")), "[SEP]");
  EXPECT_EQ(tok->id_to_token(1 << 30), "");
  EXPECT_EQ(tok->vocab_size(), 3000u);
  auto with_specials = tok->decode({*tok->token_to_id("[CLS]"), *tok->token_to_id("[SEP]")}, false);
  ASSERT_TRUE(with_specials.has_value());
  EXPECT_EQ(*with_specials, "[CLS] [SEP]");
}

TEST(TokenizerThreads, ConcurrentEncodeGivesSameIds) {
  auto tok = load("bpe_gpt2.tokenizer.json");
  ASSERT_NE(tok, nullptr);
  std::vector<std::string> texts;
  for (const json& c : read_jsonl("corpus.jsonl")) texts.push_back(c.get<std::string>());
  texts.resize(600);
  std::vector<std::vector<int64_t>> want;
  for (const auto& t : texts) want.push_back(tok->encode(t, std::nullopt, {})->ids);
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (size_t i = k; i < texts.size(); i += 1) {
        auto e = tok->encode(texts[(i * 7 + k) % texts.size()], std::nullopt, {});
        if (!e || e->ids != want[(i * 7 + k) % texts.size()]) ++failures[k];
      }
    });
  for (auto& t : threads) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

TEST(TokenizerErrors, BadFilesGiveClearErrors) {
  auto missing = Tokenizer::from_file("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), ingot::ErrorCode::kNotFound);

  auto malformed = Tokenizer::from_json_string("{\"model\": {\"type\": \"BPE\", ");
  ASSERT_FALSE(malformed.has_value());
  EXPECT_EQ(malformed.status().code(), ingot::ErrorCode::kInvalidModel);

  std::string path = write_temp("{ \"version\": \"1.0\", \"model\": [1, 2", ".json");
  auto malformed_file = Tokenizer::from_file(path);
  std::remove(path.c_str());
  ASSERT_FALSE(malformed_file.has_value());
  EXPECT_NE(malformed_file.status().message().find(path), std::string::npos);

  auto unknown = Tokenizer::from_json_string(R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.status().message().find("Unigram"), std::string::npos);

  auto wrong_types = Tokenizer::from_json_string(R"({"model": {"type": "WordPiece", "vocab": {"a": "x"}}})");
  EXPECT_FALSE(wrong_types.has_value());
  auto no_unk = Tokenizer::from_json_string(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  EXPECT_FALSE(no_unk.has_value());
  auto bad_merge = Tokenizer::from_json_string(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})");
  EXPECT_FALSE(bad_merge.has_value());
  auto not_object = Tokenizer::from_json_string("[1, 2, 3]");
  EXPECT_FALSE(not_object.has_value());
  auto bad_normalizer = Tokenizer::from_json_string(
      R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "normalizer": {"type": "Mystery"}})");
  EXPECT_FALSE(bad_normalizer.has_value());

  std::string empty_vocab = write_temp("", ".txt");
  auto ev = Tokenizer::from_file(empty_vocab);
  std::remove(empty_vocab.c_str());
  EXPECT_FALSE(ev.has_value());
}

TEST(TokenizerErrors, BadInputGivesClearErrors) {
  auto tok = load("bpe_roberta.tokenizer.json");
  ASSERT_NE(tok, nullptr);
  auto bad_utf8 = tok->encode("abc\xff\xfe", std::nullopt, {});
  ASSERT_FALSE(bad_utf8.has_value());
  EXPECT_EQ(bad_utf8.status().code(), ingot::ErrorCode::kInvalidArgument);
  auto truncated_seq = tok->encode("\xe4\xb8", std::nullopt, {});
  EXPECT_FALSE(truncated_seq.has_value());
  auto bad_pair = tok->encode("ok", std::string_view("\xc0\x80"), {});
  EXPECT_FALSE(bad_pair.has_value());
  auto out_of_range = tok->decode({0, 999999}, true);
  ASSERT_FALSE(out_of_range.has_value());
  EXPECT_NE(out_of_range.status().message().find("999999"), std::string::npos);
  auto negative = tok->decode({-1});
  EXPECT_FALSE(negative.has_value());
  std::vector<std::string> texts{"a", "b"}, pairs{"c"};
  EXPECT_FALSE(tok->encode_batch(texts, &pairs, {}).has_value());
  // A byte-level token sequence that is not valid UTF-8 decodes with U+FFFD, like HF.
  auto lone = tok->decode({*tok->token_to_id("\xc3\x83")});  // "Ã" stands for byte 0xC3
  ASSERT_TRUE(lone.has_value());
  EXPECT_EQ(*lone, "\xef\xbf\xbd");
}

namespace {

// bpe_gpt2.tokenizer.json with one more added token.
std::unique_ptr<Tokenizer> gpt2_with(const std::string& content, bool lstrip, bool rstrip, bool single_word) {
  std::ifstream f(fixture("bpe_gpt2.tokenizer.json"));
  json j = json::parse(f);
  j["added_tokens"].push_back({{"id", 3000}, {"content", content}, {"single_word", single_word}, {"lstrip", lstrip},
                               {"rstrip", rstrip}, {"normalized", false}, {"special", true}});
  auto t = Tokenizer::from_json_string(j.dump());
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return t.has_value() ? std::move(t).value() : nullptr;
}

std::vector<int64_t> ids_of(const Tokenizer& t, const std::string& text) { return t.encode(text, std::nullopt, {})->ids; }

std::vector<int64_t> join(std::initializer_list<std::vector<int64_t>> parts) {
  std::vector<int64_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

// HF's added-token rules: lstrip/rstrip swallow the neighbouring whitespace into the token,
// single_word only matches between non-word characters.
TEST(TokenizerAddedTokens, StripAndSingleWordFlags) {
  auto plain = gpt2_with("<sep2>", false, false, false);
  auto lstrip = gpt2_with("<sep2>", true, false, false);
  auto rstrip = gpt2_with("<sep2>", false, true, false);
  auto single = gpt2_with("<sep2>", false, false, true);
  ASSERT_TRUE(plain && lstrip && rstrip && single);
  const Tokenizer& p = *plain;
  EXPECT_EQ(ids_of(p, "hi <sep2> there"), join({ids_of(p, "hi "), {3000}, ids_of(p, " there")}));
  EXPECT_EQ(ids_of(*lstrip, "hi  <sep2> there"), join({ids_of(p, "hi"), {3000}, ids_of(p, " there")}));
  EXPECT_EQ(ids_of(*rstrip, "hi <sep2>  there"), join({ids_of(p, "hi "), {3000}, ids_of(p, "there")}));
  auto glued = ids_of(*single, "x<sep2>y");
  EXPECT_EQ(std::count(glued.begin(), glued.end(), 3000), 0);
  EXPECT_EQ(ids_of(*single, "x <sep2>."), join({ids_of(p, "x "), {3000}, ids_of(p, ".")}));
  // Longest match wins over a shorter token starting at the same place.
  EXPECT_EQ(ids_of(p, "<s><sep2>"), (std::vector<int64_t>{*p.token_to_id("<s>"), 3000}));
  EXPECT_EQ(p.id_to_token(3000), "<sep2>");
  auto decoded = p.decode({3000}, false);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, "<sep2>");
}

// A normalized (non-special) added token is matched after normalization: "HELLO" lowercased.
TEST(TokenizerAddedTokens, NormalizedTokenMatchesNormalizedText) {
  std::ifstream f(fixture("wordpiece.tokenizer.json"));
  json j = json::parse(f);
  j["added_tokens"].push_back({{"id", 3000}, {"content", "Zebra"}, {"single_word", false}, {"lstrip", false},
                               {"rstrip", false}, {"normalized", true}, {"special", false}});
  auto t = Tokenizer::from_json_string(j.dump());
  ASSERT_TRUE(t.has_value()) << t.status().message();
  auto e = (*t)->encode("a ZEBRA b", std::nullopt, {});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::count(e->ids.begin(), e->ids.end(), 3000), 1);
  EXPECT_EQ((*t)->vocab_size(), 3001u);
  auto d = (*t)->decode(e->ids);  // not special: kept by skip_special_tokens
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, "a Zebra b");  // the token's content, as HF decodes it
}

TEST(TokenizerErrors, DirectoryIsNotATokenizer) {
  auto dir = Tokenizer::from_file(std::string(INGOT_SOURCE_DIR) + "/tests/text");
  ASSERT_FALSE(dir.has_value());
  EXPECT_NE(dir.status().message().find("directory"), std::string::npos);
}
