#include "ir/classifier_head_attrs.h"

#include <string>

namespace ingot {

const char* head_activation_name(HeadActivation act) {
  switch (act) {
    case HeadActivation::kNone: return "";
    case HeadActivation::kRelu: return "Relu";
    case HeadActivation::kTanh: return "Tanh";
    case HeadActivation::kGeluErf: return "Gelu";
    case HeadActivation::kGeluTanh: return "GeluTanh";
  }
  return "";
}

Expected<ClassifierHeadSpec> parse_classifier_head(const Node& node) {
  ClassifierHeadSpec s;
  s.epsilon = node.attrs.get_float("epsilon", 1e-5f);
  if (!(s.epsilon >= 0))
    return invalid_model("attribute 'epsilon' = " + std::to_string(s.epsilon) + " must be >= 0");
  const std::string a = node.attrs.get_string("activation", "");
  bool known = false;
  for (HeadActivation h : {HeadActivation::kNone, HeadActivation::kRelu, HeadActivation::kTanh,
                           HeadActivation::kGeluErf, HeadActivation::kGeluTanh})
    if (a == head_activation_name(h)) s.act = h, known = true;
  if (!known)
    return invalid_model("attribute 'activation' = '" + a + "' must be \"\", \"Relu\", \"Tanh\", \"Gelu\" or \"GeluTanh\"");
  const int64_t out = node.attrs.get_int("output_dtype", 0);
  if (out != 0 && out != int64_t(DType::kFloat32))
    return invalid_model("attribute 'output_dtype' = " + std::to_string(out) + " must be 0 (X's dtype) or 1 (float32)");
  s.float_output = out != 0;
  return s;
}

}  // namespace ingot
