#include "runtime/kernel.h"

namespace ingot {

static std::string registry_key(const std::string& backend, const std::string& domain,
                                const std::string& op) {
  return backend + "|" + domain + "|" + op;
}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry r;
  return r;
}

bool KernelRegistry::add(const std::string& backend, const std::string& domain,
                         const std::string& op_type, KernelFactory factory) {
  map_[registry_key(backend, domain, op_type)] = std::move(factory);
  return true;
}

const KernelFactory* KernelRegistry::find(const std::string& backend, const std::string& domain,
                                          const std::string& op_type) const {
  auto it = map_.find(registry_key(backend, domain, op_type));
  return it == map_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::ops(const std::string& backend) const {
  std::vector<std::string> out;
  std::string prefix = backend + "|";
  for (const auto& [k, f] : map_) {
    if (k.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = k.substr(prefix.size());
    auto bar = rest.find('|');
    out.push_back(rest.substr(0, bar) + ":" + rest.substr(bar + 1));
  }
  return out;
}

Expected<std::unique_ptr<OpKernel>> create_kernel(const std::string& backend, const Node& node,
                                                  int node_index, int opset) {
  const KernelFactory* f = KernelRegistry::instance().find(backend, node.domain, node.op_type);
  std::string where = describe_node(node, node_index);
  if (!f) {
    std::string dom = node.domain.empty() ? "ai.onnx" : node.domain;
    return unsupported(where + ": ingot has no " + backend + " kernel for op '" + node.op_type +
                       "' of domain '" + dom + "'");
  }
  auto k = (*f)(node, opset);
  if (!k) return k.status().with_context(where + ": ");
  return k;
}

}  // namespace ingot
