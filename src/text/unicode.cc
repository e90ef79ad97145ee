#include "text/unicode.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/locid.h>

namespace ingot::text {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 with `consumed` set to the
// maximal invalid subpart (at least 1) when it is not well-formed (Unicode §3.9, table 3-7).
size_t utf8_sequence(std::string_view s, size_t i, size_t& consumed) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char lead = b(i);
  if (lead < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    consumed = 1;
    return 0;
  }
  size_t k = 1;
  for (; k < len; ++k) {
    if (i + k >= s.size()) break;
    unsigned char c = b(i + k);
    unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) break;
  }
  if (k == len) return len;
  consumed = k;
  return 0;
}

char32_t decode_at(std::string_view s, size_t i, size_t len) {
  auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  switch (len) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t bad = 0;
    size_t len = utf8_sequence(s, i, bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t bad = 0;
    size_t len = utf8_sequence(s, i, bad);
    if (len == 0) {
      out.push_back(0xFFFD);
      i += bad;
    } else {
      out.push_back(decode_at(s, i, len));
      i += len;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t bad = 0;
    size_t len = utf8_sequence(bytes, i, bad);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

bool is_white_space(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE); }

bool is_alphanumeric(char32_t c) {
  auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC)) return true;
  int8_t t = u_charType(u);
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool is_word_char(char32_t c) {
  auto u = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL)) return true;
  int8_t t = u_charType(u);
  return t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK || t == U_COMBINING_SPACING_MARK ||
         t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION;
}

bool is_other(char32_t c) {
  int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_UNASSIGNED || t == U_PRIVATE_USE_CHAR ||
         t == U_SURROGATE;
}

bool is_bert_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
    return true;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_nonspacing_mark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

void append_lowercase(std::u32string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  // A one-character string has no casing context, so ICU's full mapping is the
  // context-free one Rust's char::to_lowercase uses.
  icu::UnicodeString one(static_cast<UChar32>(c));
  one.toLower(icu::Locale::getRoot());
  for (int32_t i = 0; i < one.length();) {
    UChar32 u = one.char32At(i);
    out.push_back(static_cast<char32_t>(u));
    i += U16_LENGTH(u);
  }
}

bool normalize(std::u32string& s, const char* form) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  std::string_view f(form);
  if (f == "NFC") n = icu::Normalizer2::getNFCInstance(err);
  else if (f == "NFD") n = icu::Normalizer2::getNFDInstance(err);
  else if (f == "NFKC") n = icu::Normalizer2::getNFKCInstance(err);
  else if (f == "NFKD") n = icu::Normalizer2::getNFKDInstance(err);
  if (n == nullptr || U_FAILURE(err)) return false;
  icu::UnicodeString src = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(s.data()),
                                                         static_cast<int32_t>(s.size()));
  if (n->isNormalized(src, err) && U_SUCCESS(err)) return true;
  err = U_ZERO_ERROR;
  icu::UnicodeString dst = n->normalize(src, err);
  if (U_FAILURE(err)) return false;
  s.clear();
  for (int32_t i = 0; i < dst.length();) {
    UChar32 u = dst.char32At(i);
    s.push_back(static_cast<char32_t>(u));
    i += U16_LENGTH(u);
  }
  return true;
}

}  // namespace ingot::text
