// Decoders (tokenizer.json "decoder"): turn tokens back into text. WordPiece (joins "##" pieces,
// optional cleanup of spaces before punctuation), ByteLevel (code points back to bytes, then
// lossy UTF-8) and Sequence are supported; with no decoder tokens are joined with spaces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ingot/status.h"

namespace ingot::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: rewrites the tokens; the final text is their concatenation.
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup);

// null gives nullptr and ok.
Expected<std::unique_ptr<Decoder>> decoder_from_json(const nlohmann::json& j);

}  // namespace ingot::text
