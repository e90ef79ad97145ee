#include "onnx_import/import.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx/onnx_pb.h"
#include "onnx_import/tensor_proto.h"

namespace ingot {
namespace {

namespace fs = std::filesystem;

Expected<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found(path + ": no such file");
  if (fs::is_directory(path, ec)) return invalid_argument(path + ": is a directory, expected an .onnx file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool parse_proto(const std::string& bytes, google::protobuf::MessageLite& msg) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  in.SetRecursionLimit(1000);
  return msg.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

class Importer {
 public:
  Importer(std::string path, const MappedWeights* mapped)
      : path_(std::move(path)), dir_(fs::path(path_).parent_path().string()), mapped_(mapped) {}

  Status import_model(const onnx::ModelProto& mp, Model& m) {
    m.path = path_;
    m.ir_version = mp.ir_version();
    m.producer_name = mp.producer_name();
    m.producer_version = mp.producer_version();
    m.domain = mp.domain();
    m.model_version = mp.model_version();
    m.doc_string = mp.doc_string();
    for (const auto& p : mp.metadata_props()) m.metadata[p.key()] = p.value();
    for (const auto& o : mp.opset_import()) {
      std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
      m.opsets[d] = o.version();
    }
    if (mp.opset_import_size() == 0) m.opsets[""] = 1;  // IR < 3 implies opset 1
    for (const auto& f : mp.functions()) functions_[f.domain() + "|" + f.name()] = &f;
    opsets_ = m.opsets;
    return import_graph(mp.graph(), m.graph, /*outer=*/nullptr);
  }

 private:
  std::string where(const std::string& what) const { return path_ + ": " + what; }

  Status import_value_info(const onnx::ValueInfoProto& vi, ValueInfo& out) {
    if (!vi.has_type()) return Status::ok();  // shape/type not declared: inferred later
    const auto& tp = vi.type();
    if (tp.has_tensor_type()) {
      const auto& tt = tp.tensor_type();
      out.dtype = DType(tt.elem_type());
      if (tt.has_shape()) {
        SymShape s;
        for (const auto& d : tt.shape().dim()) {
          Dim dim;
          if (d.has_dim_value()) dim.value = d.dim_value();
          else if (d.has_dim_param()) dim.symbol = d.dim_param();
          s.push_back(dim);
        }
        out.shape = std::move(s);
      }
    } else if (tp.has_sequence_type()) {
      out.non_tensor_kind = "sequence";
    } else if (tp.has_optional_type()) {
      out.non_tensor_kind = "optional";
    } else if (tp.has_map_type()) {
      out.non_tensor_kind = "map";
    } else if (tp.has_sparse_tensor_type()) {
      out.non_tensor_kind = "sparse tensor";
    }
    return Status::ok();
  }

  Status import_attribute(const onnx::AttributeProto& ap, const Node& node, Attribute& a,
                          const Graph& scope) {
    using AP = onnx::AttributeProto;
    auto type = ap.type();
    if (type == AP::UNDEFINED) {  // IR < 3 files: infer the kind from the field that is set
      if (ap.has_f()) type = AP::FLOAT;
      else if (ap.has_i()) type = AP::INT;
      else if (ap.has_s()) type = AP::STRING;
      else if (ap.has_t()) type = AP::TENSOR;
      else if (ap.has_g()) type = AP::GRAPH;
      else if (ap.floats_size()) type = AP::FLOATS;
      else if (ap.ints_size()) type = AP::INTS;
      else if (ap.strings_size()) type = AP::STRINGS;
      else if (ap.tensors_size()) type = AP::TENSORS;
      else if (ap.graphs_size()) type = AP::GRAPHS;
    }
    // What messages about the attribute begin with (an attribute's tensors have no names); built
    // only for a message or a tensor, not for every attribute of the model.
    auto at = [&] { return where("node '" + node.name + "' (" + node.op_type + "): attribute '" + ap.name() + "'"); };
    if (!ap.ref_attr_name().empty()) {
      return invalid_model(at() + " refers to a function attribute outside a function");
    }
    switch (type) {
      case AP::FLOAT: a.kind = Attribute::Kind::kFloat; a.f = ap.f(); break;
      case AP::INT: a.kind = Attribute::Kind::kInt; a.i = ap.i(); break;
      case AP::STRING: a.kind = Attribute::Kind::kString; a.s = ap.s(); break;
      case AP::FLOATS: a.kind = Attribute::Kind::kFloats; a.floats.assign(ap.floats().begin(), ap.floats().end()); break;
      case AP::INTS: a.kind = Attribute::Kind::kInts; a.ints.assign(ap.ints().begin(), ap.ints().end()); break;
      case AP::STRINGS:
        a.kind = Attribute::Kind::kStrings;
        for (const auto& s : ap.strings()) a.strings.push_back(s);
        break;
      case AP::TENSOR: {
        a.kind = Attribute::Kind::kTensor;
        auto t = tensor_from_proto(ap.t(), dir_, at());
        if (!t) return t.status();
        a.t = std::move(*t);
        break;
      }
      case AP::TENSORS:
        a.kind = Attribute::Kind::kTensors;
        for (const auto& tp : ap.tensors()) {
          auto t = tensor_from_proto(tp, dir_, at() + " [" + std::to_string(a.tensors.size()) + "]");
          if (!t) return t.status();
          a.tensors.push_back(std::move(*t));
        }
        break;
      case AP::GRAPH: {
        a.kind = Attribute::Kind::kGraph;
        a.g = std::make_shared<Graph>();
        INGOT_RETURN_IF_ERROR(import_graph(ap.g(), *a.g, &scope));
        break;
      }
      case AP::GRAPHS:
        a.kind = Attribute::Kind::kGraphs;
        for (const auto& gp : ap.graphs()) {
          auto g = std::make_shared<Graph>();
          INGOT_RETURN_IF_ERROR(import_graph(gp, *g, &scope));
          a.graphs.push_back(std::move(g));
        }
        break;
      case AP::TYPE_PROTO: case AP::TYPE_PROTOS:
        // Only Optional takes type attributes; ingot does not run it, and the node is
        // reported as unsupported with its name when the model is built.
        a.kind = Attribute::Kind::kString;
        break;
      case AP::SPARSE_TENSOR: case AP::SPARSE_TENSORS:
        return unsupported(where("node '" + node.name + "' (" + node.op_type + "): sparse tensor attribute '" +
                                 ap.name() + "' is not supported"));
      default:
        return invalid_model(at() + " has no value");
    }
    return Status::ok();
  }

  // Imports one graph. `outer` is the enclosing graph for subgraphs: names defined nowhere
  // inside become captures.
  Status import_graph(const onnx::GraphProto& gp, Graph& g, const Graph* outer) {
    g.name = gp.name();
    std::set<std::string> init_names;
    for (const auto& tp : gp.initializer()) {
      if (tp.name().empty()) return invalid_model(where("graph '" + gp.name() + "' has an initializer without a name"));
      auto t = tensor_from_proto(tp, dir_, path_, mapped_);
      if (!t) return t.status();
      ValueId id = g.intern(tp.name());
      g.value(id).dtype = t->dtype();
      SymShape s;
      for (int64_t d : t->shape()) s.push_back(Dim{d, {}});
      g.value(id).shape = s;
      g.initializers[id] = std::move(*t);
      init_names.insert(tp.name());
    }
    if (gp.sparse_initializer_size()) {
      return unsupported(where("graph '" + gp.name() + "' has sparse initializers, which ingot does not support"));
    }
    for (const auto& vi : gp.input()) {
      ValueId id = g.intern(vi.name());
      INGOT_RETURN_IF_ERROR(import_value_info(vi, g.value(id)));
      // Before IR 4 initializers were also listed as inputs; they are constants, not inputs.
      if (!init_names.count(vi.name())) g.inputs.push_back(id);
    }
    for (const auto& vi : gp.value_info()) {
      ValueId id = g.intern(vi.name());
      INGOT_RETURN_IF_ERROR(import_value_info(vi, g.value(id)));
    }
    std::set<std::string> defined(init_names.begin(), init_names.end());
    for (ValueId id : g.inputs) defined.insert(g.value(id).name);
    for (const auto& np : gp.node()) {
      INGOT_RETURN_IF_ERROR(import_node(np, g, defined, outer, 0));
    }
    for (const auto& vi : gp.output()) {
      ValueId id = g.intern(vi.name());
      ValueInfo declared = g.value(id);
      INGOT_RETURN_IF_ERROR(import_value_info(vi, declared));
      g.value(id) = declared;
      g.outputs.push_back(id);
      if (!defined.count(vi.name())) {
        if (outer && outer->find(vi.name()) != kNoValue) {
          g.captures.push_back(id);
          defined.insert(vi.name());
        } else {
          return invalid_model(where("graph output '" + vi.name() + "' is produced by no node"));
        }
      }
    }
    return Status::ok();
  }

  Status import_node(const onnx::NodeProto& np, Graph& g, std::set<std::string>& defined,
                     const Graph* outer, int depth) {
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    std::string desc = "node '" + n.name + "' (" + n.op_type + ")";
    for (const auto& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      if (!defined.count(in)) {
        if (outer && outer->find(in) != kNoValue) {
          ValueId id = g.intern(in);
          g.captures.push_back(id);
          defined.insert(in);
        } else {
          return invalid_model(where(desc + ": input '" + in +
                                     "' is not a graph input, an initializer or the output of an earlier node"));
        }
      }
      n.inputs.push_back(g.intern(in));
    }
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(kNoValue);
        continue;
      }
      n.outputs.push_back(g.intern(out));
    }
    // Attributes may hold subgraphs that read this graph's values.
    for (const auto& ap : np.attribute()) {
      Attribute a;
      INGOT_RETURN_IF_ERROR(import_attribute(ap, n, a, g));
      n.attrs.set(ap.name(), std::move(a));
    }
    auto fit = functions_.find(np.domain() + "|" + np.op_type());
    if (fit != functions_.end()) {
      if (depth > 32) return invalid_model(where(desc + ": model-local functions nest too deeply"));
      return inline_function(*fit->second, np, g, defined, outer, depth);
    }
    for (const auto& out : np.output()) if (!out.empty()) defined.insert(out);
    g.nodes.push_back(std::move(n));
    return Status::ok();
  }

  // Expands a call of a model-local function (torch.export may emit them) into its body,
  // renaming the body's values so they cannot clash with the caller's.
  Status inline_function(const onnx::FunctionProto& f, const onnx::NodeProto& call, Graph& g,
                         std::set<std::string>& defined, const Graph* outer, int depth) {
    std::string prefix = "_" + (call.name().empty() ? f.name() : call.name()) + "_" +
                         std::to_string(inline_counter_++) + "/";
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() ? call.output(i) : "";
    std::map<std::string, const onnx::AttributeProto*> call_attrs;
    for (const auto& a : call.attribute()) call_attrs[a.name()] = &a;
    for (const auto& body : f.node()) {
      onnx::NodeProto n = body;
      n.set_name(prefix + body.name());
      auto map_name = [&](const std::string& s) -> std::string {
        if (s.empty()) return s;
        auto it = rename.find(s);
        if (it != rename.end()) return it->second;
        return prefix + s;
      };
      for (auto& in : *n.mutable_input()) in = map_name(in);
      for (auto& out : *n.mutable_output()) {
        std::string mapped = map_name(out);
        rename[out] = mapped;
        out = mapped;
      }
      n.clear_attribute();
      for (const auto& a : body.attribute()) {
        if (a.ref_attr_name().empty()) {
          *n.add_attribute() = a;
          continue;
        }
        const onnx::AttributeProto* src = nullptr;
        if (auto it = call_attrs.find(a.ref_attr_name()); it != call_attrs.end()) src = it->second;
        if (!src) continue;  // optional attribute left unset
        onnx::AttributeProto copy = *src;
        copy.set_name(a.name());
        *n.add_attribute() = copy;
      }
      INGOT_RETURN_IF_ERROR(import_node(n, g, defined, outer, depth + 1));
    }
    return Status::ok();
  }

  std::string path_, dir_;
  const MappedWeights* mapped_ = nullptr;
  std::map<std::string, int64_t> opsets_;
  std::map<std::string, const onnx::FunctionProto*> functions_;
  int inline_counter_ = 0;
};

}  // namespace

Expected<Model> load_onnx_bytes(const std::string& bytes, const std::string& path, const MappedWeights* mapped) {
  onnx::ModelProto mp;
  if (bytes.empty()) return invalid_model(path + ": file is empty, expected an ONNX model");
  if (!parse_proto(bytes, mp)) {
    return invalid_model(path + ": not a valid ONNX model (protobuf parsing failed: the file is truncated, corrupt or not ONNX)");
  }
  if (!mp.has_graph() || mp.ir_version() <= 0) {
    return invalid_model(path + ": not an ONNX model (no graph or IR version in the file)");
  }
  Model m;
  Importer imp(path, mapped);
  INGOT_RETURN_IF_ERROR(imp.import_model(mp, m));
  return m;
}

Expected<Model> load_onnx(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  return load_onnx_bytes(*bytes, path);
}

Expected<Tensor> load_tensor_proto(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  onnx::TensorProto tp;
  if (!parse_proto(*bytes, tp)) return invalid_argument(path + ": not a serialized ONNX TensorProto");
  return tensor_from_proto(tp, fs::path(path).parent_path().string(), path);
}

}  // namespace ingot
