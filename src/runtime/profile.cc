#include "runtime/profile.h"

namespace ingot {

Status complete_profile(const std::string& model_path, const Graph& g, Profile& p) {
  for (auto* m : {&p.min, &p.opt, &p.max})
    for (const auto& [name, s] : *m) {
      bool known = false;
      for (ValueId id : g.inputs) known |= g.value(id).name == name;
      if (!known) return invalid_argument(model_path + ": profile names '" + name + "', which is not a model input");
    }
  for (ValueId id : g.inputs) {
    const ValueInfo& v = g.value(id);
    bool given = p.min.count(v.name) || p.opt.count(v.name) || p.max.count(v.name);
    if (!given) {
      Shape s;
      bool fixed = v.shape.has_value();
      if (v.shape)
        for (const Dim& d : *v.shape) {
          fixed &= d.known();
          s.push_back(d.value);
        }
      if (!fixed) {
        return invalid_argument(model_path + ": input '" + v.name + "' has dynamic shape " +
                                (v.shape ? sym_shape_str(*v.shape) : std::string("(unknown rank)")) +
                                ": give its range with --min-shapes/--opt-shapes/--max-shapes");
      }
      p.min[v.name] = p.opt[v.name] = p.max[v.name] = s;
      continue;
    }
    // Any corner left out takes the other given ones (opt defaults to max, then min).
    if (!p.max.count(v.name)) p.max[v.name] = p.opt.count(v.name) ? p.opt[v.name] : p.min[v.name];
    if (!p.opt.count(v.name)) p.opt[v.name] = p.max[v.name];
    if (!p.min.count(v.name)) p.min[v.name] = p.opt[v.name];
    const Shape &lo = p.min[v.name], &mid = p.opt[v.name], &hi = p.max[v.name];
    if (lo.size() != mid.size() || mid.size() != hi.size())
      return invalid_argument(model_path + ": input '" + v.name + "': min/opt/max shapes have different ranks");
    if (v.shape && v.shape->size() != hi.size()) {
      return invalid_argument(model_path + ": input '" + v.name + "' has rank " + std::to_string(v.shape->size()) +
                              " " + sym_shape_str(*v.shape) + ", profile shape " + shape_str(hi) + " has rank " +
                              std::to_string(hi.size()));
    }
    for (size_t d = 0; d < hi.size(); ++d) {
      if (lo[d] < 0 || lo[d] > mid[d] || mid[d] > hi[d]) {
        return invalid_argument(model_path + ": input '" + v.name + "': need min <= opt <= max in every dimension, got " +
                                shape_str(lo) + " / " + shape_str(mid) + " / " + shape_str(hi));
      }
      if (v.shape && (*v.shape)[d].known() && (lo[d] != (*v.shape)[d].value || hi[d] != (*v.shape)[d].value)) {
        return invalid_argument(model_path + ": input '" + v.name + "' dimension " + std::to_string(d) + " is fixed at " +
                                std::to_string((*v.shape)[d].value) + " by the model, profile gives " +
                                std::to_string(lo[d]) + ".." + std::to_string(hi[d]));
      }
    }
  }
  return Status::ok();
}

bool profile_contains(const Profile& p, const std::map<std::string, Shape>& shapes) {
  for (const auto& [name, s] : shapes) {
    auto lo = p.min.find(name), hi = p.max.find(name);
    if (lo == p.min.end() || hi == p.max.end() || lo->second.size() != s.size()) return false;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] < lo->second[d] || s[d] > hi->second[d]) return false;
  }
  return true;
}

Expected<std::vector<Profile>> profiles_from_json(const nlohmann::json& j) {
  std::vector<Profile> out;
  try {
    for (const auto& p : j) {
      Profile prof;
      for (const auto& [k, v] : p.at("min").items()) prof.min[k] = v.get<Shape>();
      for (const auto& [k, v] : p.at("opt").items()) prof.opt[k] = v.get<Shape>();
      for (const auto& [k, v] : p.at("max").items()) prof.max[k] = v.get<Shape>();
      out.push_back(std::move(prof));
    }
  } catch (const std::exception& e) {
    return invalid_argument(std::string("not a list of {\"min\", \"opt\", \"max\"} profiles: ") + e.what());
  }
  return out;
}

nlohmann::json profiles_to_json(const std::vector<Profile>& profiles) {
  auto shapes = [](const std::map<std::string, Shape>& m) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : m) o[k] = v;
    return o;
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Profile& p : profiles)
    out.push_back({{"min", shapes(p.min)}, {"opt", shapes(p.opt)}, {"max", shapes(p.max)}});
  return out;
}

std::string describe_profiles(const std::vector<Profile>& profiles) {
  std::string out;
  for (size_t i = 0; i < profiles.size(); ++i) {
    out += (i ? "; " : "") + std::string("profile ") + std::to_string(i) + ": ";
    bool first = true;
    for (const auto& [name, lo] : profiles[i].min) {
      out += (first ? "" : ", ") + name + " " + shape_str(lo) + ".." + shape_str(profiles[i].max.at(name));
      first = false;
    }
  }
  return out;
}

}  // namespace ingot
