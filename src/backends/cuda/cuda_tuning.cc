// Build-time tuning of CUDA engines (see cuda_tuning.h).
#include "backends/cuda/cuda_tuning.h"

#include <string>

#include "backends/cuda/cuda_executor.h"

namespace ingot::cuda {

nlohmann::json tuning_json(const std::vector<GemmTactic>& tactics, const nlohmann::json& previous) {
  nlohmann::json out = previous.is_object() ? previous : nlohmann::json::object();
  nlohmann::json& list = out["cuda_gemm"];
  if (!list.is_array()) list = nlohmann::json::array();
  for (const GemmTactic& t : tactics) {
    nlohmann::json entry = {{"product", t.product}, {"config", t.config}};
    bool replaced = false;
    for (nlohmann::json& e : list)
      if (e.is_object() && e.value("product", "") == t.product) e = entry, replaced = true;
    if (!replaced) list.push_back(std::move(entry));
  }
  return out;
}

Expected<std::vector<GemmTactic>> tactics_from_json(const nlohmann::json& tuning) {
  std::vector<GemmTactic> out;
  if (tuning.is_null()) return out;
  auto bad = [](const std::string& what) {
    return invalid_model("engine manifest: device_tuning: " + what);
  };
  if (!tuning.is_object()) return bad("expected an object, got " + std::string(tuning.type_name()));
  if (!tuning.contains("cuda_gemm")) return out;
  const nlohmann::json& list = tuning["cuda_gemm"];
  if (!list.is_array()) return bad("cuda_gemm: expected an array, got " + std::string(list.type_name()));
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    const std::string where = "cuda_gemm[" + std::to_string(i) + "]: ";
    if (!e.is_object() || !e.contains("product") || !e["product"].is_string() || !e.contains("config") ||
        !e["config"].is_array())
      return bad(where + "expected {\"product\": string, \"config\": [9 integers]}");
    GemmTactic t;
    t.product = e["product"].get<std::string>();
    const nlohmann::json& c = e["config"];
    if (c.size() != t.config.size()) return bad(where + "config has " + std::to_string(c.size()) + " values, expected 9");
    for (size_t j = 0; j < c.size(); ++j) {
      if (!c[j].is_number_integer()) return bad(where + "config[" + std::to_string(j) + "] is not an integer");
      t.config[j] = c[j].get<int64_t>();
    }
    out.push_back(std::move(t));
  }
  return out;
}

Expected<nlohmann::json> CudaExecutor::tune(const std::vector<Tensor>& inputs, const nlohmann::json& previous) const {
  auto context = create_context();
  if (!context) return context.status();
  const WideTuneScope scope;
  auto outputs = (*context)->run(inputs);
  if (!outputs) return outputs.status();
  return tuning_json(scope.tactics(), previous);
}

}  // namespace ingot::cuda
