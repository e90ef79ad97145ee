// ingot inspect MODEL [--json FILE]: what is in an ONNX model and what ingot can't run, or, for
// an engine file, what it was built for (device, ISA, precision, profiles, memory) and its
// optimized graph. Uses only the importer and the engine file reader (no device), so it works
// on models with unsupported ops and on engines for a GPU this machine lacks.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "io/json_text.h"
#include "onnx_import/import.h"
#include "plan/engine_file.h"
#include "runtime/profile.h"
#include "runtime/kernel.h"

namespace ingot::cli {
namespace {

struct InspectOptions {
  std::string model;
  std::string json;
  std::string backend = "cpu";
};

struct UnsupportedNode {
  std::string op, domain, name, graph;
};

struct Summary {
  std::map<std::string, int64_t> ops;  // "Op" or "domain:Op" -> count
  int64_t nodes = 0;
  int64_t params = 0, param_bytes = 0, initializers = 0;
  std::vector<UnsupportedNode> unsupported;
};

std::string op_key(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type; }

// Walks a graph and the bodies of its If/Loop/Scan nodes.
void summarize(const Graph& g, const std::string& backend, const std::string& where, Summary& s) {
  for (const auto& [id, t] : g.initializers) {
    s.initializers++;
    s.params += t.numel();
    s.param_bytes += int64_t(t.nbytes());
  }
  const KernelRegistry& reg = KernelRegistry::instance();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    s.nodes++;
    s.ops[op_key(n)]++;
    if (!reg.find(backend, n.domain, n.op_type)) {
      s.unsupported.push_back({n.op_type, n.domain.empty() ? "ai.onnx" : n.domain,
                               n.name.empty() ? "#" + std::to_string(i) : n.name, where});
    }
    for (const auto& [aname, a] : n.attrs.all()) {
      std::string sub = where + (where.empty() ? "" : "/") + (n.name.empty() ? "#" + std::to_string(i) : n.name) + "." + aname;
      if (a.g) summarize(*a.g, backend, sub, s);
      for (const auto& gg : a.graphs) if (gg) summarize(*gg, backend, sub, s);
    }
  }
}

nlohmann::json shape_json(const std::optional<SymShape>& s) {
  if (!s) return nullptr;
  nlohmann::json a = nlohmann::json::array();
  for (const Dim& d : *s) {
    if (d.known()) a.push_back(d.value);
    else if (!d.symbol.empty()) a.push_back(d.symbol);
    else a.push_back(nullptr);
  }
  return a;
}

std::string dtype_str(const ValueInfo& v) {
  if (!v.non_tensor_kind.empty()) return v.non_tensor_kind;
  return v.dtype == DType::kUndefined ? "?" : dtype_name(v.dtype);
}

std::string shape_text(const ValueInfo& v) { return v.shape ? sym_shape_str(*v.shape) : "[rank unknown]"; }

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v), out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out += ',';
    out += *it;
    ++n;
  }
  return std::string(out.rbegin(), out.rend());
}

// The engine manifest's fields people look for, one per line.
void print_engine(std::ostream& out, const nlohmann::json& man) {
  auto str = [&](const char* k) { return man.contains(k) ? (man[k].is_string() ? man[k].get<std::string>() : json_text(man[k])) : std::string("?"); };
  out << "engine      format " << str("format_version") << ", built by ingot " << str("ingot_version") << "\n";
  out << "device      " << str("device") << " (" << str("isa") << ")";
  if (man.contains("cuda") && man["cuda"].is_object()) {
    const auto& c = man["cuda"];
    if (c.contains("gpu")) out << ", " << c["gpu"].get<std::string>();
  }
  out << "\n";
  out << "precision   " << str("precision") << "\n";
  if (man.contains("retyped_io") && man["retyped_io"].is_object()) {
    out << "io          " << str("io_precision") << ": float32 in the model, float16 here:";
    for (const char* k : {"inputs", "outputs"})
      if (man["retyped_io"].contains(k) && man["retyped_io"][k].is_array())
        for (const auto& n : man["retyped_io"][k])
          if (n.is_string()) out << " " << n.get<std::string>();
    out << "\n";
  }
  if (man.contains("source_model")) out << "built from  " << str("source_model") << "\n";
  if (man.contains("profiles")) {
    auto profiles = profiles_from_json(man["profiles"]);
    out << "profiles    "
        << (!profiles                  ? json_text(man["profiles"])
            : !profiles->empty()         ? describe_profiles(*profiles)
            : man.contains("arena_bytes") ? std::string("none (static input shapes)")
                                          : std::string("none (") + kDynamicWithoutProfile + ")")
        << "\n";
  }
  if (man.contains("weight_bytes")) out << "weights     " << human_bytes(man["weight_bytes"].get<double>()) << "\n";
  if (man.contains("arena_bytes")) out << "arena       " << human_bytes(man["arena_bytes"].get<double>()) << "\n";
}

int run_inspect(const InspectOptions& o) {
  Model m;
  nlohmann::json manifest;
  const bool engine = is_engine_file(o.model);
  if (engine) {
    auto f = read_engine_file(o.model);
    if (!f) return error(f.status());
    m = std::move(f->model);
    manifest = std::move(f->manifest);
  } else {
    auto model = load_onnx(o.model);
    if (!model) return error(model.status());
    m = std::move(*model);
  }
  const Graph& g = m.graph;
  Summary s;
  // An engine's support list goes unused: its kernels were chosen when it was built (ingot
  // build --verbose lists the ops a CUDA engine runs on the CPU).
  summarize(g, o.backend, "", s);

  // ---- text
  std::ostream& out = std::cout;
  if (engine) print_engine(out, manifest);
  out << "model       " << m.path << (engine ? " (its optimized graph)" : "") << "\n";
  out << "ir_version  " << m.ir_version << "\n";
  out << "opsets      ";
  bool first = true;
  for (const auto& [d, v] : m.opsets) {
    out << (first ? "" : ", ") << (d.empty() ? "ai.onnx" : d) << " " << v;
    first = false;
  }
  out << "\n";
  if (!m.producer_name.empty() || !m.producer_version.empty()) {
    out << "producer    " << printable(m.producer_name) << (m.producer_version.empty() ? "" : " " + printable(m.producer_version)) << "\n";
  }
  if (!g.name.empty()) out << "graph       " << printable(g.name) << "\n";

  auto print_values = [&](const char* title, const std::vector<ValueId>& ids) {
    out << title << " (" << ids.size() << ")\n";
    size_t w_name = 0, w_type = 0;
    for (ValueId id : ids) {
      w_name = std::max(w_name, printable(g.value(id).name).size());
      w_type = std::max(w_type, dtype_str(g.value(id)).size());
    }
    for (ValueId id : ids) {
      const ValueInfo& v = g.value(id);
      out << "  " << std::left << std::setw(int(w_name)) << printable(v.name) << "  " << std::setw(int(w_type)) << dtype_str(v)
          << "  " << shape_text(v) << "\n";
    }
  };
  print_values("inputs", g.inputs);
  print_values("outputs", g.outputs);

  std::vector<std::pair<std::string, int64_t>> hist(s.ops.begin(), s.ops.end());
  std::stable_sort(hist.begin(), hist.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "ops (" << s.nodes << " nodes, " << hist.size() << " op types)\n";
  size_t w = 0;
  for (const auto& [k, c] : hist) w = std::max(w, printable(k).size());
  for (const auto& [k, c] : hist) out << "  " << std::left << std::setw(int(w)) << printable(k) << "  " << c << "\n";
  out << "parameters  " << with_commas(s.params) << " (" << human_bytes(double(s.param_bytes)) << " in "
      << s.initializers << " initializers)\n";
  if (!engine && s.unsupported.empty()) {
    out << "support     every node has a " << o.backend << " kernel\n";
  } else if (!engine) {
    out << "support     " << s.unsupported.size() << " node(s) have no " << o.backend
        << " kernel in ingot; this model will not run:\n";
    for (const auto& u : s.unsupported) {
      out << "  " << printable(u.op) << "  (domain " << printable(u.domain) << ")  node '" << printable(u.name) << "'"
          << (u.graph.empty() ? "" : " in subgraph " + printable(u.graph)) << "\n";
    }
  }

  // ---- json
  if (!o.json.empty()) {
    nlohmann::json j;
    if (engine) j["engine"] = manifest;
    j["model"] = m.path;
    j["ir_version"] = m.ir_version;
    j["opsets"] = nlohmann::json::object();
    for (const auto& [d, v] : m.opsets) j["opsets"][d.empty() ? "ai.onnx" : d] = v;
    j["producer"] = {{"name", m.producer_name}, {"version", m.producer_version}};
    j["graph_name"] = g.name;
    auto values = [&](const std::vector<ValueId>& ids) {
      nlohmann::json a = nlohmann::json::array();
      for (ValueId id : ids) {
        const ValueInfo& v = g.value(id);
        a.push_back({{"name", v.name}, {"dtype", dtype_str(v)}, {"shape", shape_json(v.shape)}});
      }
      return a;
    };
    j["inputs"] = values(g.inputs);
    j["outputs"] = values(g.outputs);
    j["num_nodes"] = s.nodes;
    j["ops"] = nlohmann::json::object();
    for (const auto& [k, c] : s.ops) j["ops"][k] = c;
    j["parameters"] = {{"count", s.params}, {"bytes", s.param_bytes}, {"initializers", s.initializers}};
    if (!engine) {
      j["backend"] = o.backend;
      j["supported"] = s.unsupported.empty();
      j["unsupported_nodes"] = nlohmann::json::array();
      for (const auto& u : s.unsupported) {
        j["unsupported_nodes"].push_back({{"op", u.op}, {"domain", u.domain}, {"name", u.name}, {"subgraph", u.graph}});
      }
    }
    std::ofstream f(o.json);
    if (!f) return error(o.json + ": cannot open for writing");
    f << json_text(j, 2) << "\n";
    f.close();
    if (!f) return error(o.json + ": write failed");
  }
  return kExitOk;
}

}  // namespace

Command setup_inspect(CLI::App& parent) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = parent.add_subcommand(
      "inspect", "show a model's inputs, outputs, ops, parameters and unsupported nodes (an engine's: also what it was built for)");
  app->add_option("model", o->model, "ONNX model or ingot engine file")->required();
  app->add_option("--json", o->json, "also write the summary as JSON to FILE")->type_name("FILE");
  return Command{app, [o] { return run_inspect(*o); }};
}

}  // namespace ingot::cli
