// Random model inputs, made the same way by `ingot run`, `ingot bench` and `ingot compare`, so
// the same --shapes and --seed give identical tensors in all three.
//
// Values are chosen to be valid for typical models: integer inputs that feed a Gather (an
// embedding lookup) stay below the table size, "mask" inputs are ones, "token_type" zeros,
// "position" an arange along the last axis, other integers uniform in [0, 100), floats uniform
// in [-1, 1), bools true.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"
#include "runtime/engine.h"

namespace ingot::cli {

// The smallest table size of the Gathers that `input` indexes, following the value through
// shape-only ops (Cast, Unsqueeze, Reshape, Expand, ...). -1 when it feeds no Gather.
int64_t gather_bound(const Graph& g, ValueId input);

// Fills `t` (already shaped) with a random value for input `io`; returns a description of what
// was drawn ("random integers in [0, 30522) (indices of a Gather over 30522 rows)").
std::string make_random_input(const Graph& g, const IoInfo& io, Tensor& t, std::mt19937_64& rng);

// Adds a random tensor for every input of `engine` not already in `inputs`, in the engine's
// input order from one generator seeded with `seed`. A shape comes from `shapes`, else from the
// declared shape: symbolic dims take the value fixed by a given tensor or another --shapes entry
// with the same symbol, else 1 (reported through `on_note`). `sources` gets a description per
// input. Errors: an input with no declared shape or dtype and no --shapes entry.
Status add_random_inputs(const Engine& engine, const std::map<std::string, Shape>& shapes, uint64_t seed,
                         std::map<std::string, Tensor>& inputs, std::map<std::string, std::string>& sources,
                         const std::function<void(const std::string&)>& on_note);

}  // namespace ingot::cli
