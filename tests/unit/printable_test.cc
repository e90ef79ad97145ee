// tools/printable.h: names from the user's files as terminal-safe text.
#include "../../tools/printable.h"

#include <gtest/gtest.h>

namespace ingot::cli {
namespace {

TEST(Printable, KeepsTextAndEscapesControlBytes) {
  EXPECT_EQ(printable("input_ids"), "input_ids");
  EXPECT_EQ(printable("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(printable("\x1b[31mred\x07"), "\\x1B[31mred\\x07");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("tab\there\nline\x7f"), "tab\\x09here\\x0Aline\\x7F");
}

TEST(Printable, EscapesBytesThatAreNotUtf8) {
  EXPECT_EQ(printable("\xFF"), "\\xFF");
  EXPECT_EQ(printable("\xC3"), "\\xC3");                        // cut short
  EXPECT_EQ(printable("\xE2\x82"), "\\xE2\\x82");               // cut short
  EXPECT_EQ(printable("\x80x"), "\\x80x");                      // a stray continuation byte
  EXPECT_EQ(printable("\xC0\x80"), "\\xC0\\x80");               // overlong NUL
  EXPECT_EQ(printable("\xE0\x80\xAF"), "\\xE0\\x80\\xAF");      // overlong '/'
  EXPECT_EQ(printable("\xED\xA0\x80"), "\\xED\\xA0\\x80");      // a surrogate
  EXPECT_EQ(printable("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("\xC3\xA9\xFF\xC3\xA9"), "\xC3\xA9\\xFF\xC3\xA9");
}

TEST(Printable, Utf8SequenceLengths) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFF";
  EXPECT_EQ(utf8_sequence(s, 0), 1u);
  EXPECT_EQ(utf8_sequence(s, 1), 2u);
  EXPECT_EQ(utf8_sequence(s, 3), 3u);
  EXPECT_EQ(utf8_sequence(s, 6), 4u);
  EXPECT_EQ(utf8_sequence(s, 10), 0u);
  EXPECT_EQ(utf8_sequence(s, 2), 0u);  // a continuation byte
}

}  // namespace
}  // namespace ingot::cli
