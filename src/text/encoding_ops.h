// Truncation, padding and concatenation of encodings, following HF `tokenizers`
// (utils/truncation.rs, utils/padding.rs, Encoding::merge).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "text/tokenizer.h"

namespace ingot::text {

struct TruncationSettings {
  size_t max_length = 512;
  enum class Strategy { kLongestFirst, kOnlyFirst, kOnlySecond } strategy = Strategy::kLongestFirst;
  bool from_left = false;  // direction "Left": keep the end of the sequence
};

struct PaddingSettings {
  bool fixed = false;  // false: to the longest of the batch
  size_t length = 0;   // for fixed
  size_t multiple_of = 0;
  int64_t pad_id = 0;
  int64_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
  bool on_left = false;
};

// Cuts one sequence, or a pair, so that together they hold at most max_length tokens.
Status truncate(Encoding& a, Encoding* b, const TruncationSettings& t);

// Pads to `target` tokens (no-op when already that long or longer).
void pad(Encoding& e, size_t target, const PaddingSettings& p);
// The length `p` asks for, given the longest encoding of the batch.
size_t padding_target(size_t longest, const PaddingSettings& p);

Encoding concatenate(std::vector<Encoding> parts);

}  // namespace ingot::text
