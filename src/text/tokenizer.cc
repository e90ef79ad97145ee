#include "text/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

namespace ingot::text {

// ---- TokenizerImpl ----------------------------------------------------------------------

void TokenizerImpl::add_token(AddedToken t) {
  std::string pattern = t.content;
  if (t.normalized && normalizer) {
    std::u32string u = to_u32(t.content);
    normalizer->normalize(u);
    pattern = to_utf8(u);
  }
  added.add(std::move(t), std::move(pattern));
}

void TokenizerImpl::choose_pad_defaults() {
  for (const char* name : {"[PAD]", "<pad>", "<|pad|>", "<|endoftext|>"}) {
    std::optional<int64_t> id = added.token_to_id(name);
    if (!id) id = model->vocab().find(name);
    if (id) {
      pad_defaults.pad_id = *id;
      pad_defaults.pad_token = name;
      return;
    }
  }
  pad_defaults.pad_id = 0;
  const std::string* zero = model->vocab().token(0);
  pad_defaults.pad_token = zero ? *zero : "";
}

Expected<Encoding> TokenizerImpl::encode_sequence(std::string_view text, int64_t type_id,
                                                  std::optional<TokenLimit> limit) const {
  if (!is_valid_utf8(text)) return invalid_argument("text to encode is not valid UTF-8");
  // The words in order: added tokens (already resolved) and pre-tokenized text for the model.
  std::vector<Segment> words;
  std::vector<std::u32string> pieces;
  for (auto& raw : added.split(text, /*normalized_tokens=*/false)) {
    if (raw.id) {
      words.push_back(std::move(raw));
      continue;
    }
    std::string normalized = std::move(raw.text);
    if (normalizer) {
      std::u32string u = to_u32(normalized);
      normalizer->normalize(u);
      normalized = to_utf8(u);
    }
    for (auto& seg : added.split(normalized, /*normalized_tokens=*/true)) {
      if (seg.id) {
        words.push_back(std::move(seg));
        continue;
      }
      pieces.assign(1, to_u32(seg.text));
      if (pre_tokenizer) INGOT_RETURN_IF_ERROR(pre_tokenizer->split(pieces));
      for (const auto& p : pieces)
        if (!p.empty()) words.push_back({to_utf8(p), std::nullopt});
    }
  }

  // HF 0.23 stops tokenizing once `limit` tokens are reached (whole words, from the end for
  // left truncation); the lengths that pair truncation compares depend on it.
  std::vector<std::vector<Token>> word_tokens(words.size());
  size_t total = 0;
  auto tokenize_word = [&](size_t i) -> Status {
    if (words[i].id) word_tokens[i].push_back({*words[i].id, words[i].text});
    else INGOT_RETURN_IF_ERROR(model->tokenize(words[i].text, word_tokens[i]));
    total += word_tokens[i].size();
    return Status::ok();
  };
  size_t begin = 0, end = words.size();
  if (limit && limit->from_left) {
    for (size_t i = words.size(); i-- > 0;) {
      INGOT_RETURN_IF_ERROR(tokenize_word(i));
      begin = i;
      if (total >= limit->max_tokens) break;
    }
  } else {
    for (size_t i = 0; i < words.size(); ++i) {
      INGOT_RETURN_IF_ERROR(tokenize_word(i));
      end = i + 1;
      if (limit && total >= limit->max_tokens) break;
    }
  }
  Encoding e;
  e.ids.reserve(total);
  for (size_t i = begin; i < end; ++i) {
    for (auto& t : word_tokens[i]) {
      e.ids.push_back(t.id);
      e.tokens.push_back(std::move(t.value));
    }
  }
  e.type_ids.assign(e.ids.size(), type_id);
  e.attention_mask.assign(e.ids.size(), 1);
  return e;
}

Expected<Encoding> TokenizerImpl::encode_unpadded(std::string_view text, std::optional<std::string_view> pair,
                                                  const EncodeOptions& options) const {
  std::optional<TruncationSettings> trunc;
  if (options.truncation_max_length) {
    trunc = saved_truncation.value_or(TruncationSettings{});
    trunc->max_length = *options.truncation_max_length;
  } else if (options.use_saved_settings) {
    trunc = saved_truncation;
  }
  auto limit_for = [&](int64_t type_id) -> std::optional<TokenLimit> {
    using S = TruncationSettings::Strategy;
    if (!trunc || (trunc->strategy == S::kOnlySecond && type_id == 0)) return std::nullopt;
    return TokenLimit{trunc->max_length, trunc->from_left};
  };

  std::vector<Encoding> parts;
  INGOT_ASSIGN_OR_RETURN(Encoding a, encode_sequence(text, 0, limit_for(0)));
  parts.push_back(std::move(a));
  if (pair) {
    INGOT_ASSIGN_OR_RETURN(Encoding b, encode_sequence(*pair, 1, limit_for(1)));
    parts.push_back(std::move(b));
  }

  if (trunc) {
    // max_length counts the special tokens the post-processor will add.
    size_t added_count = options.add_special_tokens && post_processor ? post_processor->added_tokens(pair.has_value()) : 0;
    if (trunc->max_length < added_count)
      return invalid_argument("truncation max_length " + std::to_string(trunc->max_length) + " is shorter than the " +
                              std::to_string(added_count) + " special tokens this tokenizer adds");
    TruncationSettings t = *trunc;
    t.max_length -= added_count;
    INGOT_RETURN_IF_ERROR(truncate(parts[0], pair ? &parts[1] : nullptr, t));
  }
  if (post_processor) parts = post_processor->process(std::move(parts), options.add_special_tokens);
  return concatenate(std::move(parts));
}

std::optional<PaddingSettings> TokenizerImpl::padding_for(const EncodeOptions& options) const {
  if (options.padding == EncodeOptions::Padding::kNone)
    return options.use_saved_settings ? saved_padding : std::nullopt;
  PaddingSettings p = pad_defaults;
  p.fixed = options.padding == EncodeOptions::Padding::kFixed;
  p.length = options.pad_to;
  return p;
}

// ---- Tokenizer --------------------------------------------------------------------------

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_json_string(std::string_view json) {
  INGOT_ASSIGN_OR_RETURN(auto impl, load_tokenizer_json(json));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return invalid_argument("'" + path + "' is a directory; give the path of tokenizer.json or vocab.txt");
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open tokenizer file '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return io_error("error reading tokenizer file '" + path + "'");
  const std::string content = ss.str();
  size_t first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && content[first] == '{') {
    auto t = from_json_string(content);
    if (!t) return t.status().with_context("'" + path + "': ");
    return t;
  }
  INGOT_ASSIGN_OR_RETURN(auto impl, load_bert_vocab_txt(path));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Expected<Encoding> Tokenizer::encode(std::string_view text, std::optional<std::string_view> pair,
                                     const EncodeOptions& options) const {
  INGOT_ASSIGN_OR_RETURN(Encoding e, impl_->encode_unpadded(text, pair, options));
  if (auto p = impl_->padding_for(options)) {
    // Alone, "longest in the batch" is this encoding itself; only a fixed length pads.
    pad(e, padding_target(e.ids.size(), *p), *p);
  }
  return e;
}

Expected<std::vector<Encoding>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                        const std::vector<std::string>* pairs,
                                                        const EncodeOptions& options) const {
  if (pairs && pairs->size() != texts.size())
    return invalid_argument("encode_batch: " + std::to_string(texts.size()) + " texts but " +
                            std::to_string(pairs->size()) + " pairs");
  std::vector<Encoding> out;
  out.reserve(texts.size());
  size_t longest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::optional<std::string_view> pair;
    if (pairs) pair = (*pairs)[i];
    auto e = impl_->encode_unpadded(texts[i], pair, options);
    if (!e) return e.status().with_context("batch item " + std::to_string(i) + ": ");
    longest = std::max(longest, e->ids.size());
    out.push_back(std::move(e).value());
  }
  if (auto p = impl_->padding_for(options)) {
    const size_t target = padding_target(longest, *p);
    for (auto& e : out) pad(e, target, *p);
  }
  return out;
}

Expected<std::string> Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    std::string token;
    if (const AddedToken* a = impl_->added.by_id(id)) {
      token = a->content;
    } else if (const std::string* t = impl_->model->vocab().token(id)) {
      token = *t;
    } else {
      return invalid_argument("decode: id " + std::to_string(id) + " is not in the vocabulary (size " +
                              std::to_string(vocab_size()) + ")");
    }
    if (skip_special_tokens && impl_->added.is_special(token)) continue;
    tokens.push_back(std::move(token));
  }
  if (!impl_->decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  std::string out;
  for (auto& piece : impl_->decoder->decode_chain(std::move(tokens))) out += piece;
  return out;
}

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  std::string t(token);
  if (auto id = impl_->added.token_to_id(t)) return id;
  return impl_->model->vocab().find(t);
}

std::string Tokenizer::id_to_token(int64_t id) const {
  if (const AddedToken* a = impl_->added.by_id(id)) return a->content;
  const std::string* t = impl_->model->vocab().token(id);
  return t ? *t : std::string();
}

size_t Tokenizer::vocab_size() const {
  size_t n = impl_->model->vocab().size();
  for (const auto& a : impl_->added.tokens())
    if (!impl_->model->vocab().find(a.content)) ++n;
  return n;
}

}  // namespace ingot::text
