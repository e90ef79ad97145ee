// The activations ingot.FusedConv applies after the convolution (and the residual sum), shared
// by the kernel (oneDNN post-ops, and a scalar fallback for a broadcast residual) and its tests.
// The fuse_conv_activation pass writes the same names and parameter lists.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "ingot/status.h"

namespace ingot::fused_conv {

enum class Act { kNone, kRelu, kLeakyRelu, kClip, kHardSwish, kHardSigmoid, kSigmoid };

struct Activation {
  Act kind = Act::kNone;
  float a = 0, b = 0;  // Clip: min/max; LeakyRelu: alpha; HardSigmoid: alpha/beta

  // `name` is the ONNX op name ("" for none); `params` as the pass writes them.
  Status parse(const std::string& name, const std::vector<float>& params) {
    auto need = [&](size_t n) -> Status {
      if (params.size() != n)
        return invalid_model("activation '" + name + "' needs " + std::to_string(n) + " activation_params, got " +
                             std::to_string(params.size()));
      return Status::ok();
    };
    if (name.empty()) {
      kind = Act::kNone;
      return need(0);
    }
    if (name == "Relu") kind = Act::kRelu;
    else if (name == "LeakyRelu") kind = Act::kLeakyRelu;
    else if (name == "Clip") kind = Act::kClip;
    else if (name == "HardSwish") kind = Act::kHardSwish;
    else if (name == "HardSigmoid") kind = Act::kHardSigmoid;
    else if (name == "Sigmoid") kind = Act::kSigmoid;
    else return invalid_model("unknown activation '" + name + "'");
    switch (kind) {
      case Act::kLeakyRelu: INGOT_RETURN_IF_ERROR(need(1)); a = params[0]; break;
      case Act::kClip:
      case Act::kHardSigmoid: INGOT_RETURN_IF_ERROR(need(2)); a = params[0], b = params[1]; break;
      default: INGOT_RETURN_IF_ERROR(need(0)); break;
    }
    if (kind == Act::kClip && !(a <= b))
      return invalid_model("Clip bounds min=" + std::to_string(a) + " > max=" + std::to_string(b));
    return Status::ok();
  }

  // The ONNX definition, for the paths oneDNN's post-ops do not cover.
  float apply(float x) const {
    switch (kind) {
      case Act::kNone: return x;
      case Act::kRelu: return x > 0 ? x : 0.f;
      case Act::kLeakyRelu: return x >= 0 ? x : a * x;
      case Act::kClip: return std::min(std::max(x, a), b);
      case Act::kHardSwish: return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
      case Act::kHardSigmoid: return std::max(0.f, std::min(1.f, a * x + b));
      case Act::kSigmoid: return 1.f / (1.f + std::exp(-x));
    }
    return x;
  }
};

}  // namespace ingot::fused_conv
