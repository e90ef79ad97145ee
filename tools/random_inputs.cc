#include "random_inputs.h"

#include <algorithm>
#include <cctype>
#include <new>
#include <set>
#include <vector>

#include "cli_common.h"
#include "ir/dispatch.h"

namespace ingot::cli {
namespace {

// Bytes of a tensor, in floating point: right for shapes whose count overflows an int64 too.
double bytes_of(const Shape& shape, DType dtype) {
  double n = double(dtype_size(dtype));
  for (int64_t d : shape) n *= double(d);
  return n;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fills t from a double per element.
template <class F>
void fill(Tensor& t, F&& value_at) {
  if (t.dtype() == DType::kBool) {
    auto* d = t.data<bool>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = value_at(i) != 0;
    return;
  }
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = T(value_at(i));
  });
}

}  // namespace

int64_t gather_bound(const Graph& g, ValueId input) {
  static const std::set<std::string> kPassThrough = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand",
                                                     "Identity", "Flatten", "Transpose"};
  std::map<ValueId, std::vector<std::pair<const Node*, size_t>>> consumers;
  for (const Node& n : g.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != kNoValue) consumers[n.inputs[i]].push_back({&n, i});
    }
  }
  int64_t bound = -1;
  std::vector<ValueId> work = {input};
  std::set<ValueId> seen = {input};
  while (!work.empty()) {
    ValueId v = work.back();
    work.pop_back();
    auto it = consumers.find(v);
    if (it == consumers.end()) continue;
    for (const auto& [n, slot] : it->second) {
      if (n->domain.empty() && kPassThrough.count(n->op_type) && slot == 0) {
        for (ValueId o : n->outputs) {
          if (o != kNoValue && seen.insert(o).second) work.push_back(o);
        }
      } else if (n->domain == "ingot" && n->op_type == "EmbedLayerNorm" && slot >= 3 && slot % 2 == 1) {
        // Its lookups are (table, ids) pairs from input 2 on: the table precedes the ids.
        auto init = g.initializers.find(n->inputs[slot - 1]);
        if (init == g.initializers.end() || init->second.rank() != 2) continue;
        int64_t size = init->second.dim(0);
        if (size > 0) bound = bound < 0 ? size : std::min(bound, size);
      } else if (n->domain.empty() && n->op_type == "Gather" && slot == 1 && !n->inputs.empty()) {
        ValueId data = n->inputs[0];
        Shape dshape;
        auto init = g.initializers.find(data);
        if (init != g.initializers.end()) {
          dshape = init->second.shape();
        } else if (g.value(data).shape) {
          bool all_known = true;
          for (const Dim& d : *g.value(data).shape) {
            all_known = all_known && d.known();
            dshape.push_back(d.value);
          }
          if (!all_known) continue;
        } else {
          continue;
        }
        int64_t axis = n->attrs.get_int("axis", 0);
        if (axis < 0) axis += int64_t(dshape.size());
        if (axis < 0 || axis >= int64_t(dshape.size())) continue;
        int64_t size = dshape[size_t(axis)];
        if (size > 0) bound = bound < 0 ? size : std::min(bound, size);
      }
    }
  }
  return bound;
}

std::string make_random_input(const Graph& g, const IoInfo& io, Tensor& t, std::mt19937_64& rng) {
  std::string name = lower(io.name);
  if (name.find("mask") != std::string::npos) {
    fill(t, [](int64_t) { return 1.0; });
    return "ones (a mask)";
  }
  if (t.dtype() == DType::kBool) {
    fill(t, [](int64_t) { return 1.0; });
    return "all true";
  }
  if (dtype_is_integer(t.dtype())) {
    if (name.find("token_type") != std::string::npos) {
      fill(t, [](int64_t) { return 0.0; });
      return "zeros (token types)";
    }
    if (name.find("position") != std::string::npos) {
      int64_t last = t.rank() ? std::max<int64_t>(t.shape().back(), 1) : 1;
      fill(t, [&](int64_t i) { return double(i % last); });
      return "arange along the last axis (positions)";
    }
    ValueId id = g.find(io.name);
    int64_t bound = id == kNoValue ? -1 : gather_bound(g, id);
    std::string why = bound > 0 ? " (indices of a Gather over " + std::to_string(bound) + " rows)" : "";
    if (bound <= 0) bound = 100;
    if (t.dtype() == DType::kInt8) bound = std::min<int64_t>(bound, 128);
    std::uniform_int_distribution<int64_t> dist(0, bound - 1);
    fill(t, [&](int64_t) { return double(dist(rng)); });
    return "random integers in [0, " + std::to_string(bound) + ")" + why;
  }
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  fill(t, [&](int64_t) { return dist(rng); });
  return "random uniform [-1, 1)";
}

Status add_random_inputs(const Engine& engine, const std::map<std::string, Shape>& shapes, uint64_t seed,
                         std::map<std::string, Tensor>& inputs, std::map<std::string, std::string>& sources,
                         const std::function<void(const std::string&)>& on_note) {
  const Graph& g = engine.model().graph;
  const std::string& mpath = engine.model().path;
  auto say = [&](const std::string& m) {
    if (on_note) on_note(m);
  };

  // Symbolic dims already fixed by given tensors or --shapes.
  std::map<std::string, int64_t> symbols;
  auto learn = [&](const IoInfo& io, const Shape& s) {
    if (!io.shape || io.shape->size() != s.size()) return;
    for (size_t d = 0; d < s.size(); ++d) {
      const Dim& dim = (*io.shape)[d];
      if (!dim.known() && !dim.symbol.empty()) symbols.emplace(dim.symbol, s[d]);
    }
  };
  for (const auto& io : engine.inputs()) {
    auto it = inputs.find(io.name);
    if (it != inputs.end()) learn(io, it->second.shape());
  }
  for (const auto& io : engine.inputs()) {
    auto it = shapes.find(io.name);
    if (it != shapes.end() && !inputs.count(io.name)) learn(io, it->second);
  }

  std::mt19937_64 rng(seed);
  std::set<std::string> noted;
  for (const auto& io : engine.inputs()) {
    if (inputs.count(io.name)) {
      if (shapes.count(io.name)) say("input '" + io.name + "' is given by a file; its --shapes entry is ignored");
      continue;
    }
    Shape shape;
    if (auto it = shapes.find(io.name); it != shapes.end()) {
      shape = it->second;
    } else if (!io.shape) {
      return invalid_argument(mpath + ": input '" + io.name + "' has no declared shape; give its shape with --shapes " +
                              io.name + ":DIMS or its value with --input " + io.name + "=FILE.npy");
    } else {
      for (size_t d = 0; d < io.shape->size(); ++d) {
        const Dim& dim = (*io.shape)[d];
        if (dim.known()) {
          shape.push_back(dim.value);
        } else if (!dim.symbol.empty()) {
          auto [it, fresh] = symbols.emplace(dim.symbol, 1);
          if (fresh && noted.insert(dim.symbol).second) {
            say("'" + dim.symbol + "' unset, using 1; set with --shapes " + io.name + ":...");
          }
          shape.push_back(it->second);
        } else {
          say("input '" + io.name + "' dimension " + std::to_string(d) + " is unnamed and unknown, using 1; set with --shapes");
          shape.push_back(1);
        }
      }
    }
    if (io.dtype == DType::kUndefined || !dtype_is_supported(io.dtype)) {
      return invalid_argument(
          mpath + ": input '" + io.name + "' has " +
          (io.dtype == DType::kUndefined ? std::string("no declared dtype") : "dtype " + dtype_name(io.dtype)) +
          ", ingot cannot make a random value for it; give it with --input " + io.name + "=FILE.npy");
    }
    // A --shapes entry may ask for more than the machine has: say which input and how much.
    Tensor t;
    try {
      t = Tensor(io.dtype, shape);
    } catch (const std::bad_alloc&) {
      return out_of_memory(mpath + ": input '" + io.name + "' of shape " + shape_str(shape) + " " +
                              dtype_name(io.dtype) + " needs " + human_bytes(bytes_of(shape, io.dtype)) +
                              ", more host memory than this machine could give");
    }
    sources[io.name] = make_random_input(g, io, t, rng);
    inputs[io.name] = t;
  }
  return Status::ok();
}

}  // namespace ingot::cli
