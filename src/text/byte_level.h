// GPT-2's bytes_to_unicode table: every byte gets a printable code point (printable Latin-1
// bytes map to themselves, the rest to U+0100 onwards), so BPE vocabularies can be plain text.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ingot::text {

// Code point standing for byte b.
char32_t byte_to_char(unsigned char b);
// The byte a code point stands for, or nullopt if it is not one of the 256.
std::optional<unsigned char> char_to_byte(char32_t c);
// Appends the byte-level text (as UTF-8) of the bytes of `utf8`.
void append_byte_level(std::string& out, std::string_view utf8);

}  // namespace ingot::text
