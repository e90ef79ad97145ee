#include "ir/graph.h"

namespace ingot {

std::string sym_shape_str(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].str();
  }
  return out + "]";
}

void Attributes::set_int(const std::string& name, int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  set(name, std::move(a));
}

void Attributes::set_float(const std::string& name, float v) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  set(name, std::move(a));
}

void Attributes::set_string(const std::string& name, std::string v) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(v);
  set(name, std::move(a));
}

const Attribute* Attributes::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

int64_t Attributes::get_int(const std::string& name, int64_t def) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kInt ? a->i : def;
}
float Attributes::get_float(const std::string& name, float def) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kFloat ? a->f : def;
}
std::string Attributes::get_string(const std::string& name, const std::string& def) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kString ? a->s : def;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, std::vector<int64_t> def) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kInts ? a->ints : def;
}
std::vector<float> Attributes::get_floats(const std::string& name, std::vector<float> def) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kFloats ? a->floats : def;
}
std::vector<std::string> Attributes::get_strings(const std::string& name) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kStrings ? a->strings : std::vector<std::string>{};
}
const Tensor* Attributes::get_tensor(const std::string& name) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kTensor ? &a->t : nullptr;
}
const Graph* Attributes::get_graph(const std::string& name) const {
  const Attribute* a = find(name);
  return a && a->kind == Attribute::Kind::kGraph ? a->g.get() : nullptr;
}

std::string describe_node(const Node& n, int index) {
  std::string op = n.domain.empty() ? n.op_type : n.domain + "." + n.op_type;
  if (!n.name.empty()) return "node '" + n.name + "' (" + op + ")";
  return "node #" + std::to_string(index) + " (" + op + ")";
}

ValueId Graph::find(const std::string& value_name) const {
  auto it = by_name_.find(value_name);
  return it == by_name_.end() ? kNoValue : it->second;
}

ValueId Graph::intern(const std::string& value_name) {
  auto it = by_name_.find(value_name);
  if (it != by_name_.end()) return it->second;
  ValueId id = ValueId(values.size());
  values.push_back(ValueInfo{value_name, DType::kUndefined, std::nullopt, {}});
  by_name_.emplace(value_name, id);
  return id;
}

ValueId Graph::add_value(const std::string& hint, DType dtype) {
  std::string name = hint;
  for (int i = 1; by_name_.count(name); ++i) name = hint + "_" + std::to_string(i);
  ValueId id = intern(name);
  values[size_t(id)].dtype = dtype;
  return id;
}

int64_t Model::opset(const std::string& d) const {
  auto it = opsets.find(d);
  return it == opsets.end() ? 0 : it->second;
}

}  // namespace ingot
