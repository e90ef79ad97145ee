// ingot's model IR. Values are integer ids into Graph::values; nodes refer to values by id.
// A graph attribute (If/Loop/Scan bodies) is a Graph of its own whose `captures` name the
// outer-scope values it reads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"

namespace ingot {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;  // an omitted optional input/output

// One dimension of a declared shape: a number, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // non-empty for a named dimension
  bool known() const { return value >= 0; }
  std::string str() const { return known() ? std::to_string(value) : (symbol.empty() ? "?" : symbol); }
};
using SymShape = std::vector<Dim>;
std::string sym_shape_str(const SymShape& s);  // "[batch, 128]"

struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::optional<SymShape> shape;  // nullopt: rank unknown
  // Not a tensor: a sequence, map or optional. ingot records it to report, never to run.
  std::string non_tensor_kind;
};

class Graph;

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kTensors, kGraphs };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;
};

// Attribute lookup with defaults. A present attribute of the wrong kind counts as absent;
// the importer has already rejected malformed ones.
class Attributes {
 public:
  void set(const std::string& name, Attribute a) { map_[name] = std::move(a); }
  // Typed setters, as the getters below (what passes write on the nodes they make).
  void set_int(const std::string& name, int64_t v);
  void set_float(const std::string& name, float v);
  void set_string(const std::string& name, std::string v);
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  const std::map<std::string, Attribute>& all() const { return map_; }

  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  const Tensor* get_tensor(const std::string& name) const;
  const Graph* get_graph(const std::string& name) const;

 private:
  std::map<std::string, Attribute> map_;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain ("ai.onnx" is normalised to "")
  std::vector<ValueId> inputs;   // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;  // kNoValue for an omitted optional output
  Attributes attrs;
};

// "node 'name' (OpType)" or "node #3 (OpType)" when it has no name: the prefix of node errors.
std::string describe_node(const Node& n, int index);

class Graph {
 public:
  std::string name;
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // graph inputs that are not initializers
  std::vector<ValueId> outputs;
  std::unordered_map<ValueId, Tensor> initializers;
  std::vector<ValueId> captures;  // values read from an enclosing graph (subgraphs only)

  ValueId find(const std::string& value_name) const;  // kNoValue if absent
  // Returns the id of `value_name`, creating the value if needed.
  ValueId intern(const std::string& value_name);
  // Creates a new value whose name starts with `hint` and is unique in the graph.
  ValueId add_value(const std::string& hint, DType dtype = DType::kUndefined);
  const ValueInfo& value(ValueId id) const { return values[size_t(id)]; }
  ValueInfo& value(ValueId id) { return values[size_t(id)]; }

 private:
  std::unordered_map<std::string, ValueId> by_name_;
};

struct Model {
  std::string path;  // where it was loaded from, for messages
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata;
  Graph graph;

  int64_t opset(const std::string& domain) const;  // 0 if not imported
};

}  // namespace ingot
