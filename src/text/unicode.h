// UTF-8 and Unicode character classes for the tokenizers, on top of ICU. Each predicate names
// the Rust function Hugging Face `tokenizers` uses, since matching HF exactly is the point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ingot::text {

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Code points of valid UTF-8 `s` (call is_valid_utf8 first; invalid bytes become U+FFFD).
std::u32string to_u32(std::string_view s);
void append_utf8(std::string& out, char32_t c);
std::string to_utf8(std::u32string_view s);

// Bytes → text the way Rust's String::from_utf8_lossy does: each maximal invalid subpart
// becomes one U+FFFD (the byte-level decoder relies on this).
std::string utf8_lossy(std::string_view bytes);

// Rust char::is_whitespace: the Unicode White_Space property.
bool is_white_space(char32_t c);
// Rust char::is_alphanumeric: Alphabetic or Numeric (Nd, Nl, No).
bool is_alphanumeric(char32_t c);
// Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation, join controls.
bool is_word_char(char32_t c);
// unicode_categories is_other: general category Cc, Cf, Cn, Co or Cs.
bool is_other(char32_t c);
// ASCII punctuation (33-47, 58-64, 91-96, 123-126) or a Unicode P* category: BERT's split set.
bool is_bert_punctuation(char32_t c);
// The CJK ideograph blocks that BERT surrounds with spaces.
bool is_chinese_char(char32_t c);
// General category Mn (what BERT's strip_accents removes after NFD).
bool is_nonspacing_mark(char32_t c);

// Rust char::to_lowercase per code point: full, context-free mapping (İ → i̇, no final sigma).
void append_lowercase(std::u32string& out, char32_t c);

// Unicode normalisation forms via ICU's Normalizer2; `form` is "NFC", "NFD", "NFKC" or "NFKD".
// Returns false only if ICU fails (it should not on valid input).
bool normalize(std::u32string& s, const char* form);

}  // namespace ingot::text
