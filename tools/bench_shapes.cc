// The shapes `ingot bench` times (bench_shapes.h).
#include "bench_shapes.h"

#include <cctype>
#include <set>

namespace ingot::cli {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const char* const kBenchShapeRule =
    "Shape sweeps: --batch sets dim 0 of every input whose dim 0 is not fixed by the model; --seq sets\n"
    "dim 1 of every integer (token) input whose dim 1 is not fixed, and any dim whose symbolic name\n"
    "contains 'seq' (sequence, seq_len, ...). Dims sharing a symbol with a swept dim follow it (so a\n"
    "float mask [batch, sequence] follows input_ids). Shapes are the product of the two lists, batch\n"
    "outer. Other dims come from --shapes, else the model, else 1 (as ingot run). --batch/--seq\n"
    "override the same dims of --shapes entries.";

Expected<BenchShapes> bench_shapes(const Engine& engine, const std::string& model,
                                const std::map<std::string, Shape>& given, std::vector<int64_t> batches,
                                std::vector<int64_t> seqs, const std::function<void(const std::string&)>& note) {
  for (const auto& [name, s] : given) {
    const IoInfo* io = engine.find_input(name);
    if (!io) {
      std::string names;
      for (const auto& i : engine.inputs()) names += (names.empty() ? "" : ", ") + i.name;
      return invalid_argument("--shapes: " + model + " has no input '" + name + "' (its inputs: " + names + ")");
    }
    if (io->shape && io->shape->size() != s.size()) {
      return invalid_argument("--shapes: input '" + name + "' of " + model + " has rank " +
                              std::to_string(io->shape->size()) + " " + sym_shape_str(*io->shape) +
                              ", but --shapes gives " + shape_str(s));
    }
  }

  // Which dims are batch / sequence (kBenchShapeRule).
  enum Role { kOther, kBatch, kSeq };
  std::map<std::string, std::vector<Role>> roles;
  std::set<std::string> batch_syms, seq_syms;
  bool has_batch = false, has_seq = false;
  for (const auto& io : engine.inputs()) {
    if (!io.shape) continue;
    std::vector<Role>& r = roles[io.name];
    r.assign(io.shape->size(), kOther);
    for (size_t d = 0; d < io.shape->size(); ++d) {
      const Dim& dim = (*io.shape)[d];
      if (dim.known()) continue;
      if (d == 0) r[d] = kBatch;
      else if ((d == 1 && dtype_is_integer(io.dtype)) || lower(dim.symbol).find("seq") != std::string::npos) r[d] = kSeq;
      if (r[d] == kBatch && !dim.symbol.empty()) batch_syms.insert(dim.symbol);
      if (r[d] == kSeq && !dim.symbol.empty()) seq_syms.insert(dim.symbol);
    }
  }
  for (const auto& io : engine.inputs()) {
    if (!io.shape) continue;
    std::vector<Role>& r = roles[io.name];
    for (size_t d = 0; d < io.shape->size(); ++d) {
      const Dim& dim = (*io.shape)[d];
      if (dim.known() || dim.symbol.empty() || r[d] != kOther) continue;
      if (batch_syms.count(dim.symbol)) r[d] = kBatch;
      else if (seq_syms.count(dim.symbol)) r[d] = kSeq;
    }
    for (Role x : r) {
      has_batch = has_batch || x == kBatch;
      has_seq = has_seq || x == kSeq;
    }
  }
  if (!batches.empty() && !has_batch) {
    return invalid_argument("--batch: no input of " + model + " has a free batch dimension (dim 0 not fixed by the model)");
  }
  if (!seqs.empty() && !has_seq) {
    return invalid_argument("--seq: no input of " + model +
                 " has a free sequence dimension (dim 1 of an integer input, or a dim named like 'seq')");
  }

  // Symbols fixed by --shapes entries (as ingot run learns them).
  std::map<std::string, int64_t> symbols;
  for (const auto& io : engine.inputs()) {
    auto it = given.find(io.name);
    if (it == given.end() || !io.shape) continue;
    for (size_t d = 0; d < it->second.size(); ++d) {
      const Dim& dim = (*io.shape)[d];
      if (!dim.known() && !dim.symbol.empty()) symbols.emplace(dim.symbol, it->second[d]);
    }
  }
  if (batches.empty()) batches = {0};  // 0: not swept
  if (seqs.empty()) seqs = {0};
  std::set<std::string> noted;  // each unset dim reported once
  BenchShapes out;
  out.has_batch_dim = has_batch, out.has_seq_dim = has_seq;
  for (int64_t b : batches) {
    for (int64_t s : seqs) {
      BenchShape r;
      for (const auto& io : engine.inputs()) {
        auto g = given.find(io.name);
        if (g == given.end() && !io.shape) continue;  // add_random_inputs reports it
        Shape shape;
        size_t rank = g != given.end() ? g->second.size() : io.shape->size();
        for (size_t d = 0; d < rank; ++d) {
          Role role = roles.count(io.name) && d < roles[io.name].size() ? roles[io.name][d] : kOther;
          if (role == kBatch && b > 0) { shape.push_back(b); continue; }
          if (role == kSeq && s > 0) { shape.push_back(s); continue; }
          if (g != given.end()) { shape.push_back(g->second[d]); continue; }
          const Dim& dim = (*io.shape)[d];
          if (dim.known()) { shape.push_back(dim.value); continue; }
          if (!dim.symbol.empty() && symbols.count(dim.symbol)) { shape.push_back(symbols[dim.symbol]); continue; }
          std::string what = dim.symbol.empty() ? "input '" + io.name + "' dimension " + std::to_string(d) : "'" + dim.symbol + "'";
          if (noted.insert(what).second) {
            note(what + " unset, using 1; set with --shapes " + io.name + ":..." +
                 (role == kBatch ? " or --batch" : role == kSeq ? " or --seq" : ""));
          }
          if (!dim.symbol.empty()) symbols[dim.symbol] = 1;
          shape.push_back(1);
        }
        r.shapes[io.name] = shape;
      }
      if (!engine.inputs().empty()) {
        auto it = r.shapes.find(engine.inputs().front().name);
        if (it != r.shapes.end() && !it->second.empty()) r.batch = it->second[0];
      }
      if (has_seq) {
        for (const auto& io : engine.inputs()) {
          auto it = roles.find(io.name);
          if (it == roles.end()) continue;
          for (size_t d = 0; d < it->second.size() && r.seq < 0; ++d) {
            if (it->second[d] == kSeq) r.seq = r.shapes[io.name][d];
          }
        }
      }
      out.each.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace ingot::cli
