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
  s.ffn = node.inputs.size() > kFfnGamma;
  if (!s.ffn) return s;
  for (int i : {kFfnGamma, kFfnW1, kFfnW2})
    if (node.inputs.size() <= size_t(i) || node.inputs[size_t(i)] == kNoValue)
      return invalid_model("the feed-forward block needs inputs 7 (its LayerNorm's gamma), 9 (W1) and 11 (W2); input " +
                           std::to_string(i) + " is missing");
  s.ffn_epsilon = node.attrs.get_float("ffn_epsilon", 1e-5f);
  if (!(s.ffn_epsilon >= 0))
    return invalid_model("attribute 'ffn_epsilon' = " + std::to_string(s.ffn_epsilon) + " must be >= 0");
  const std::string f = node.attrs.get_string("ffn_activation", "");
  known = false;
  for (HeadActivation h : {HeadActivation::kNone, HeadActivation::kRelu, HeadActivation::kGeluErf, HeadActivation::kGeluTanh})
    if (f == head_activation_name(h)) s.ffn_act = h, known = true;
  if (!known)
    return invalid_model("attribute 'ffn_activation' = '" + f + "' must be \"\", \"Relu\", \"Gelu\" or \"GeluTanh\"");
  s.projection = node.inputs.size() > kProjW;
  if (!s.projection) return s;
  for (int i : {kProjW, kProjResidual})
    if (node.inputs.size() <= size_t(i) || node.inputs[size_t(i)] == kNoValue)
      return invalid_model("the output projection needs inputs 13 (W) and 15 (the residual); input " + std::to_string(i) +
                           " is missing");
  s.residual_position = node.attrs.get_int("residual_position", 0);
  return s;
}

}  // namespace ingot
