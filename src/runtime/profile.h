// Optimization profiles (trtexec's min/opt/max shapes): the range of input shapes an engine
// serves. The optimizer specializes for opt, the memory plan is sized for max, and a run
// outside every profile is refused with the input, its shape and the allowed range.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"

namespace ingot {

struct Profile {
  std::map<std::string, Shape> min, opt, max;
};

// Checks a profile against the model's inputs: every input named, ranks and fixed dims match
// the declaration, min <= opt <= max. Inputs with static shapes may be left out (filled in).
Status complete_profile(const std::string& model_path, const Graph& g, Profile& p);
// True when every input shape lies within [min, max] of the profile.
bool profile_contains(const Profile& p, const std::map<std::string, Shape>& shapes);
// JSON form, as engine manifests and `ingot build --profiles` files hold it:
// [{"min": {"input_ids": [1, 1]}, "opt": {...}, "max": {...}}, ...]. Malformed JSON is an error.
Expected<std::vector<Profile>> profiles_from_json(const nlohmann::json& j);
nlohmann::json profiles_to_json(const std::vector<Profile>& profiles);
// "input_ids: 1x1 .. 8x512" lines for messages.
std::string describe_profiles(const std::vector<Profile>& profiles);
// What an engine without profiles whose inputs have dynamic dims serves (build, inspect).
constexpr const char* kDynamicWithoutProfile = "dynamic input shapes: any runs, its memory planned at its first run";

}  // namespace ingot
