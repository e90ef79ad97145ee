// Names and texts from the user's files (ONNX names, paths, tokenizer strings) as terminal-safe
// text. ONNX does not check that its strings are UTF-8, and a name may hold control bytes: an
// escape sequence in a node name would otherwise drive the terminal the error is printed on.
#pragma once

#include <cstddef>
#include <string>

namespace ingot::cli {

// Control bytes (below 0x20, and 0x7F) and bytes that are not part of well-formed UTF-8 become
// \xNN; everything else is kept as it is. Error lines and notes always go through it.
std::string printable(const std::string& s);

// Length of the well-formed UTF-8 sequence starting at s[i] (1-4), or 0 when there is none
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8_sequence(const std::string& s, size_t i);

}  // namespace ingot::cli
