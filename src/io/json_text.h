// JSON text of a document that quotes names and paths from the user's files. ONNX names and Linux
// paths may hold bytes that are not UTF-8, which JSON cannot: nlohmann::json's dump throws on
// them, so every JSON that ingot writes goes through json_text, which writes such a byte as
// U+FFFD (the replacement character) and the rest as it is.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ingot {

// indent < 0: one line (nlohmann::json::dump's convention).
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ingot
