#include "runtime/device.h"

namespace ingot {

static std::map<std::string, std::unique_ptr<DeviceBackend>>& backends() {
  static std::map<std::string, std::unique_ptr<DeviceBackend>> b;
  return b;
}

const DeviceBackend* find_device_backend(const std::string& name) {
  auto it = backends().find(name);
  return it == backends().end() ? nullptr : it->second.get();
}

bool register_device_backend(const std::string& name, std::unique_ptr<DeviceBackend> backend) {
  backends()[name] = std::move(backend);
  return true;
}

}  // namespace ingot
