// Helpers shared by the fuse_attention source files.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ingot/tensor.h"
#include "ir/graph_editor.h"
#include "passes/fuse_attention_layout.h"
#include "passes/pass.h"

namespace ingot::attn {

Tensor transpose2d(const Tensor& t);
// Concatenates 2-D tensors of `rows` rows along columns (1-D ones end to end when one_d); an
// undefined part is `widths[i]` columns of zeros.
Tensor concat_cols(const std::vector<Tensor>& parts, const std::vector<int64_t>& widths, DType dtype, int64_t rows,
                   bool one_d);

// What one matched block becomes.
struct Plan {
  std::set<int> nodes;  // everything the Attention node replaces
  ValueId x = kNoValue, out = kNoValue, mask = kNoValue;
  std::string mask_kind = "none";
  float filter = -std::numeric_limits<float>::infinity();
  double scale = 1;
  bool nan_to_zero = false;
  int64_t heads = 0;
  Tensor wqkv, bqkv, wout, bout;
};

// Checks that nothing outside plan.nodes reads what they compute (but plan.out), then replaces
// them by one ingot.Attention node named `name`; false (with `why`) leaves the graph untouched.
bool rewrite(GraphEditor& ed, const Plan& plan, const std::string& name, std::string& why);

}  // namespace ingot::attn
