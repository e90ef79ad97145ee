#include "ir/feed_forward_attrs.h"

#include <string>

namespace ingot {

Expected<FeedForwardSpec> parse_feed_forward(const Node& node) {
  FeedForwardSpec s;
  if (node.inputs.size() != kFfInputs)
    return invalid_model("needs 7 inputs (X, W1, b1, W2, b2, gamma, beta; b1, b2 and beta may be empty), got " +
                         std::to_string(node.inputs.size()));
  static const char* names[] = {"X", "W1", "b1", "W2", "b2", "gamma", "beta"};
  for (int i : {kFfX, kFfW1, kFfW2, kFfGamma})
    if (node.inputs[size_t(i)] == kNoValue)
      return invalid_model("needs input " + std::to_string(i) + " (" + names[i] + ")");
  s.epsilon = node.attrs.get_float("epsilon", 1e-5f);
  if (!(s.epsilon >= 0)) return invalid_model("attribute 'epsilon' = " + std::to_string(s.epsilon) + " must be >= 0");
  const std::string a = node.attrs.get_string("activation", "");
  for (HeadActivation h : {HeadActivation::kNone, HeadActivation::kRelu, HeadActivation::kGeluErf, HeadActivation::kGeluTanh})
    if (a == head_activation_name(h)) {
      s.act = h;
      return s;
    }
  return invalid_model("attribute 'activation' = '" + a + "' must be \"\", \"Relu\", \"Gelu\" or \"GeluTanh\"");
}

}  // namespace ingot
