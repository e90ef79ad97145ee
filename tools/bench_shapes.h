// The input shapes `ingot bench` times: its --shapes entries, swept over --batch and --seq by
// kBenchShapeRule, the rest from the model or 1 (as ingot run fills them).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "runtime/engine.h"

namespace ingot::cli {

// bench --help's footer: which dims --batch and --seq set.
extern const char* const kBenchShapeRule;

struct BenchShape {
  std::map<std::string, Shape> shapes;  // every input whose rank is known
  int64_t batch = 1;                    // dim 0 of the first input
  int64_t seq = -1;                     // the swept sequence dim; -1: the model has none
};

struct BenchShapes {
  std::vector<BenchShape> each;
  bool has_batch_dim = false, has_seq_dim = false;  // some input has a free batch / sequence dim
};

// The shapes for each (batch, seq) pair, batch outer; an empty list sweeps nothing. `given` are
// the --shapes entries (checked against `engine`'s inputs: an unknown name or a wrong rank is an
// error naming `model`); a --batch or --seq list with no dim to set is an error. `note` hears
// each dim left unset (it then reads 1) once per message.
Expected<BenchShapes> bench_shapes(const Engine& engine, const std::string& model,
                                const std::map<std::string, Shape>& given, std::vector<int64_t> batches,
                                std::vector<int64_t> seqs, const std::function<void(const std::string&)>& note);

}  // namespace ingot::cli
