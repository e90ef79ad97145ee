#include "text/byte_level.h"

#include "text/unicode.h"

namespace ingot::text {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int16_t, 512> to_byte{};  // all mapped code points are below U+0200
  Tables() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int n = 0;
    for (int b = 0; b < 256; ++b) to_char[b] = printable(b) ? char32_t(b) : char32_t(256 + n++);
    for (int b = 0; b < 256; ++b) to_byte[to_char[b]] = static_cast<int16_t>(b);
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_char(unsigned char b) { return tables().to_char[b]; }

std::optional<unsigned char> char_to_byte(char32_t c) {
  if (c >= 512 || tables().to_byte[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(tables().to_byte[c]);
}

void append_byte_level(std::string& out, std::string_view utf8) {
  for (char ch : utf8) append_utf8(out, byte_to_char(static_cast<unsigned char>(ch)));
}

}  // namespace ingot::text
