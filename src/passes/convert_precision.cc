// convert_precision: float32 -> float16/bfloat16 (contract in convert_precision.h).
//
// The steps: (1) know every value's dtype (shape inference on probe shapes, then the declared
// value info, then simple per-op dtype rules for what inference could not reach); (2) decide
// which nodes stay float32 (the tables below, user choices, subgraph nodes, unknown dtypes,
// shape arithmetic); (3) give every float32 value that a half-precision node reads or writes a
// half version and every float32 reader a float32 version, with one Cast per value and
// direction; (4) fix attributes that name float32 (Cast's `to`, ConstantOfShape's value, ...);
// (5) remove Casts that became no-ops or round trips.
#include "passes/convert_precision.h"

#include <algorithm>
#include <set>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ir/graph_editor.h"
#include "passes/pass.h"

namespace ingot {
namespace {

constexpr DType kF32 = DType::kFloat32;

// Default-domain ops that stay float32 whatever the target. Kept small on purpose: every op a
// transformer or CNN spends its time in (MatMul, Gemm, Conv, the ingot.* fused ops,
// normalizations, Softmax, elementwise math, Where, Cast, Concat, Gather, Reshape, Einsum, TopK,
// Resize's data...) converts.
//   Not listed, on purpose: TopK (ordering survives rounding up to ties, which resolve by index
//   like any other tie); Einsum (a batched matrix product); Resize (only its roi/scales stay
//   float32, see input_stays_fp32); ConstantOfShape (its value attribute is converted instead);
//   Softmax/LayerNormalization/reductions (ingot's kernels compute in float and store in half,
//   which is where half precision is safe).
struct KeepRule {
  std::string_view op;
  const char* reason;
};
constexpr KeepRule kKeepFp32[] = {
    // start/limit/delta are index arithmetic: fp16 holds integers exactly only up to 2048
    // (bfloat16: 256), so the element count ceil((limit - start) / delta) and the values drift.
    {"Range", "index arithmetic (fp16 is exact for integers up to 2048 only)"},
    // Output dtype comes from a `dtype` attribute, not from inputs; sampling keeps full
    // resolution and the result is Cast where it meets half-precision data.
    {"RandomNormal", "output dtype set by attribute; samples keep full resolution"},
    {"RandomUniform", "output dtype set by attribute; samples keep full resolution"},
    {"RandomNormalLike", "output dtype set by attribute; samples keep full resolution"},
    {"RandomUniformLike", "output dtype set by attribute; samples keep full resolution"},
    {"Bernoulli", "output dtype set by attribute; samples keep full resolution"},
    {"Multinomial", "output dtype set by attribute; samples keep full resolution"},
    // Box coordinates against IoU and score thresholds: fp16's spacing is 0.5 at 1000 px, which
    // flips suppression decisions. The outputs are int64 indices, so nothing is gained in half.
    {"NonMaxSuppression", "box coordinates and IoU thresholds (fp16 step 0.5 px at 1000 px)"},
    // rois are pixel coordinates: half precision moves the sampling points by up to 0.5 px.
    {"RoiAlign", "rois are pixel coordinates (fp16 step 0.5 px at 1000 px)"},
    // The output is a running sum that grows with the axis length; at 2048 fp16's spacing is 1,
    // so small increments vanish from the result itself, not only from an accumulator.
    {"CumSum", "running sums outgrow fp16's resolution"},
    // A product of N pivots overflows 65504 (fp16) for modest matrices.
    {"Det", "products of pivots overflow fp16"},
    // Scales are tensor(float) by the type constraints before opset 19 and the dequantized
    // result's dtype is the scale's: the integer math has nothing to gain from half.
    {"QuantizeLinear", "scales are float32 by type constraint"},
    {"DequantizeLinear", "scales are float32 by type constraint; output dtype follows the scale"},
    {"DynamicQuantizeLinear", "scales are float32 by type constraint"},
    {"QLinearMatMul", "scales are float32 by type constraint"},
    {"QLinearConv", "scales are float32 by type constraint"},
    // Spectra are sums over the frame length (hundreds to thousands of terms): audio front ends
    // lose tens of dB of dynamic range in fp16. Window/filter-bank generators take their output
    // dtype from an attribute.
    {"DFT", "sums over the frame length lose dynamic range in half"},
    {"STFT", "sums over the frame length lose dynamic range in half"},
    {"MelWeightMatrix", "output dtype set by attribute"},
    {"HannWindow", "output dtype set by attribute"},
    {"HammingWindow", "output dtype set by attribute"},
    {"BlackmanWindow", "output dtype set by attribute"},
};

const char* builtin_keep_reason(const Node& n) {
  // ONNX-ML ops (trees, SVMs, scalers...) admit float and double only by their type constraints.
  if (n.domain == "ai.onnx.ml") return "ai.onnx.ml ops take float32/float64 only";
  if (!n.domain.empty()) return nullptr;
  for (const KeepRule& r : kKeepFp32)
    if (n.op_type == r.op) return r.reason;
  return nullptr;
}

// Inputs of converted ops that stay float32: each has a type constraint of its own in the op's
// definition and holds coordinates, ratios or counts rather than data.
bool input_stays_fp32(const Node& n, int k) {
  if (!n.domain.empty()) return false;
  const std::string& op = n.op_type;
  // roi (1): crop box coordinates; scales (2): ratios that decide the output size
  // (floor(in * scale)); a scale like 1/3 in fp16 changes the size of inputs of a few thousand.
  if (op == "Resize") return k == 1 || k == 2;
  if (op == "Upsample") return k == 1;   // scales: tensor(float) only
  if (op == "GridSample") return k == 1;  // grid: sampling coordinates (fp16 step 5e-4 near 1)
  if (op == "OneHot") return k == 1;      // depth: a count
  return false;
}

// Outputs of converted ops whose dtype does not follow the converted inputs.
bool output_stays_fp32(const Node& n, int k) {
  // Mean and InvStdDev have stash_type's dtype (float32 by default), whatever X's is.
  return n.domain.empty() && n.op_type == "LayerNormalization" && k >= 1;
}

// Inputs whose dtype does not matter to the op: they read whichever version of the value
// exists (no Cast is added for them).
bool free_input(const Node& n, int k) {
  if (!n.domain.empty() || k != 0) return false;
  const std::string& op = n.op_type;
  return op == "Cast" || op == "CastLike" || op == "Shape" || op == "Size";
}

// Ops whose float output dtype comes from an attribute (fixed by fix_attributes below).
bool attribute_typed(const Node& n) {
  if (!n.domain.empty()) return false;
  const std::string& op = n.op_type;
  return op == "Cast" || op == "ConstantOfShape" || op == "Constant" || op == "EyeLike";
}

bool has_subgraph(const Node& n) {
  for (const auto& [k, a] : n.attrs.all())
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

DType attr_dtype(const Node& n, const char* name, DType def) {
  const Attribute* a = n.attrs.find(name);
  return a && a->kind == Attribute::Kind::kInt ? DType(a->i) : def;
}

// Output k's dtype by simple per-op rules, for values shape inference could not reach (after a
// data-dependent shape, inside a failed inference). kUndefined when the rules do not know.
DType rule_dtype(const Node& n, int k, const std::vector<DType>& dt) {
  auto in = [&](size_t i) {
    return i < n.inputs.size() && n.inputs[i] != kNoValue ? dt[size_t(n.inputs[i])] : DType::kUndefined;
  };
  auto body_out = [&](const char* attr, size_t idx) {
    const Graph* b = n.attrs.get_graph(attr);
    return b && idx < b->outputs.size() ? b->value(b->outputs[idx]).dtype : DType::kUndefined;
  };
  const std::string& op = n.op_type;
  if (n.domain.empty()) {
    if (op == "Cast") return attr_dtype(n, "to", DType::kUndefined);
    if (op == "CastLike") return in(1);
    if (op == "Shape" || op == "Size" || op == "NonZero" || op == "ArgMax" || op == "ArgMin" ||
        op == "NonMaxSuppression")
      return DType::kInt64;
    if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
        op == "Not" || op == "And" || op == "Or" || op == "Xor" || op == "IsNaN" || op == "IsInf")
      return DType::kBool;
    if ((op == "TopK" || op == "MaxPool") && k == 1) return DType::kInt64;
    if (op == "Unique" && k >= 1) return DType::kInt64;
    if (op == "Dropout" && k == 1) return DType::kBool;
    if (op == "LayerNormalization" && k >= 1) return attr_dtype(n, "stash_type", kF32);
    if (op == "Where") return in(1);
    if (op == "OneHot") return in(2);
    if (op == "DequantizeLinear") return in(1);
    if (op == "QuantizeLinear") return n.inputs.size() > 2 ? in(2) : DType::kUInt8;
    if (op == "ConstantOfShape") {
      const Tensor* t = n.attrs.get_tensor("value");
      return t ? t->dtype() : kF32;
    }
    if (op == "Constant") {
      if (const Tensor* t = n.attrs.get_tensor("value")) return t->dtype();
      if (n.attrs.has("value_float") || n.attrs.has("value_floats")) return kF32;
      if (n.attrs.has("value_int") || n.attrs.has("value_ints")) return DType::kInt64;
      return DType::kUndefined;
    }
    if (op == "RandomNormal" || op == "RandomUniform") return attr_dtype(n, "dtype", kF32);
    if (op == "EyeLike" || op == "RandomNormalLike" || op == "RandomUniformLike") return attr_dtype(n, "dtype", in(0));
    if (op == "If") return body_out("then_branch", size_t(k));
    if (op == "Loop") return body_out("body", size_t(k) + 1);
    if (op == "Scan") return body_out("body", size_t(k));
  }
  if (has_subgraph(n)) return DType::kUndefined;
  return in(0);  // elementwise, data movement, MatMul/Conv, normalizations, ingot.* ops
}

// The largest finite value of the target.
float max_finite(DType t) { return t == DType::kFloat16 ? 65504.f : bfloat16::to_float(0x7f7f); }

// A float32 constant in the target dtype. Finite values beyond the target's range saturate to
// its largest finite value instead of becoming ±inf: exporters build attention masks as
// (1 - mask) * finfo(float32).min, and with that constant at -inf the unmasked positions compute
// 0 · -inf = NaN, which Softmax then spreads over the whole row. (bfloat16 needs it too:
// float32's max rounds up to bfloat16's inf.) True infinities and NaN stay what they are.
// For float16, non-zero values below its smallest subnormal (6e-8) become that subnormal
// instead of 0, so an epsilon such as 1e-12 in a decomposed normalization stays a guard against
// division by zero.
Tensor to_target(const Tensor& t, DType target) {
  Tensor out(target, t.shape());
  const float* s = t.data<float>();
  const float hi = max_finite(target);
  const float tiny = target == DType::kFloat16 ? 5.9604645e-8f : 0.f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    float x = s[i];
    if (std::isfinite(x)) {
      if (x > hi) x = hi;
      else if (x < -hi) x = -hi;
      else if (x != 0 && std::fabs(x) < tiny) x = std::copysign(tiny, x);
    }
    if (target == DType::kFloat16) out.data<float16>()[i] = float16(x);
    else out.data<bfloat16>()[i] = bfloat16(x);
  }
  return out;
}

Attribute tensor_attr(Tensor t) {
  Attribute a;
  a.kind = Attribute::Kind::kTensor;
  a.t = std::move(t);
  return a;
}

const char* suffix(DType t) { return t == DType::kFloat16 ? "_fp16" : "_bf16"; }

// Matches "domain:op" (that domain; "" or "ai.onnx" for the default one) or "op" (any domain).
bool user_keeps(const std::set<std::string>& keep, const Node& n) {
  for (const std::string& k : keep) {
    auto colon = k.rfind(':');
    if (colon == std::string::npos) {
      if (k == n.op_type) return true;
      continue;
    }
    std::string domain = k.substr(0, colon);
    if (domain == "ai.onnx") domain.clear();
    if (domain == n.domain && k.substr(colon + 1) == n.op_type) return true;
  }
  return false;
}

struct Use {
  int node;
  int input;
};

class Converter {
 public:
  Converter(Model& m, const PrecisionOptions& o) : m_(m), g_(m.graph), target_(o.target), opts_(o) {}

  Expected<int> run() {
    if (target_ != DType::kFloat16 && target_ != DType::kBFloat16)
      return invalid_argument("convert_float_precision: target must be float16 or bfloat16, not " + dtype_name(target_));
    GraphEditor ed(g_);
    INGOT_RETURN_IF_ERROR(topo_order(ed));
    value_dtypes();
    classify(ed);
    int converted = rewrite(ed);
    INGOT_RETURN_IF_ERROR(fix_attributes());
    // New Casts were appended: put them in order and drop initializers nothing reads now.
    GraphEditor(g_).commit();
    remove_redundant_casts();
    return converted;
  }

 private:
  // Node indices in execution order (subgraph captures count as reads).
  Status topo_order(const GraphEditor& ed) {
    size_t n = g_.nodes.size();
    std::vector<int> indeg(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; ++i)
      for (ValueId o : g_.nodes[i].outputs) {
        if (o == kNoValue) continue;
        for (int c : ed.consumers(o))
          if (c != int(i)) users[i].push_back(c), ++indeg[size_t(c)];
      }
    std::vector<int> ready;
    for (size_t i = n; i-- > 0;)
      if (!indeg[i]) ready.push_back(int(i));
    while (!ready.empty()) {
      int i = ready.back();
      ready.pop_back();
      order_.push_back(i);
      for (int u : users[size_t(i)])
        if (--indeg[size_t(u)] == 0) ready.push_back(u);
    }
    if (order_.size() != n) {
      for (size_t i = 0; i < n; ++i)
        if (indeg[i]) return invalid_model("convert_float_precision: " + describe_node(g_.nodes[i], int(i)) + " is part of a cycle");
    }
    return Status::ok();
  }

  void value_dtypes() {
    dt_.assign(g_.values.size(), DType::kUndefined);
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].non_tensor_kind.empty()) dt_[v] = g_.values[v].dtype;
    for (const auto& [id, t] : g_.initializers) dt_[size_t(id)] = t.dtype();
    // Inference is what the kernels will do; it wins over declarations. Unbound dims are 1:
    // dtypes do not depend on sizes.
    auto metas = infer_with(m_, probe_binding(m_));
    if (metas)
      for (size_t v = 0; v < metas->size() && v < dt_.size(); ++v)
        if ((*metas)[v].known && g_.values[v].non_tensor_kind.empty()) dt_[v] = (*metas)[v].dtype;
    for (int i : order_) {
      const Node& n = g_.nodes[size_t(i)];
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        ValueId o = n.outputs[k];
        if (o != kNoValue && dt_[size_t(o)] == DType::kUndefined && g_.value(o).non_tensor_kind.empty())
          dt_[size_t(o)] = rule_dtype(n, int(k), dt_);
      }
    }
  }

  bool is_f32(ValueId v) const { return v != kNoValue && dt_[size_t(v)] == kF32; }

  // A float32 graph output, or a float32 value read only by Casts that write graph outputs (the
  // boundary retype_float_io puts after a value the model computes in float32).
  bool writes_graph_output(const GraphEditor& ed, const Node& node) const {
    for (ValueId v : node.outputs) {
      if (v == kNoValue || !is_f32(v)) continue;
      if (ed.is_graph_output(v)) return true;
      const std::vector<int>& readers = ed.consumers(v);
      bool only_output_casts = !readers.empty();
      for (int r : readers) {
        const Node& c = g_.nodes[size_t(r)];
        only_output_casts &= c.domain.empty() && c.op_type == "Cast" && c.outputs.size() == 1 &&
                             c.outputs[0] != kNoValue && ed.is_graph_output(c.outputs[0]);
      }
      if (only_output_casts) return true;
    }
    return false;
  }

  void keep(int i, std::string why) {
    keep_[size_t(i)] = 1;
    why_[size_t(i)] = std::move(why);
  }

  void classify(const GraphEditor& ed) {
    size_t n = g_.nodes.size();
    keep_.assign(n, 0);
    why_.assign(n, "");
    for (size_t i = 0; i < n; ++i) {
      const Node& node = g_.nodes[i];
      if (has_subgraph(node)) { keep(int(i), "has a subgraph (bodies stay float32)"); continue; }
      if (const char* r = builtin_keep_reason(node)) { keep(int(i), r); continue; }
      if (user_keeps(opts_.keep_fp32_ops, node)) { keep(int(i), "in keep_fp32_ops"); continue; }
      if (opts_.keep_output_producers_fp32 && writes_graph_output(ed, node)) {
        keep(int(i), "writes a graph output (keep_output_producers_fp32)");
        continue;
      }
      bool unknown = false, f32_in = false, f32_out = false;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        ValueId v = node.inputs[k];
        if (v == kNoValue) continue;
        unknown |= dt_[size_t(v)] == DType::kUndefined;
        f32_in |= is_f32(v) && !free_input(node, int(k)) && !input_stays_fp32(node, int(k));
      }
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        ValueId v = node.outputs[k];
        if (v == kNoValue) continue;
        unknown |= dt_[size_t(v)] == DType::kUndefined;
        f32_out |= is_f32(v) && !output_stays_fp32(node, int(k));
      }
      if (unknown) { keep(int(i), "a value's dtype is unknown"); continue; }
      // A float32 output that follows no float32 input and no attribute we know how to convert:
      // its dtype is the op's own business.
      if (f32_out && !f32_in && !attribute_typed(node))
        keep(int(i), "float32 output does not follow a float input");
    }

    // Shape arithmetic: floats computed from shapes and constants only, ending in an
    // index-like use, stay float32. `data`: the value depends on a graph input's contents.
    std::vector<char> data(g_.values.size(), 0);
    for (ValueId v : g_.inputs) data[size_t(v)] = 1;
    for (int i : order_) {
      const Node& node = g_.nodes[size_t(i)];
      bool d = has_subgraph(node);
      if (!(node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size")))
        for (ValueId v : node.inputs) d |= v != kNoValue && data[size_t(v)];
      for (ValueId o : node.outputs)
        if (o != kNoValue) data[size_t(o)] = d;
    }
    auto index_like_use = [&](int c, ValueId v) {
      const Node& cn = g_.nodes[size_t(c)];
      for (size_t k = 0; k < cn.inputs.size(); ++k) {
        if (cn.inputs[k] != v) continue;
        if (keep_[size_t(c)] || input_stays_fp32(cn, int(k))) return true;
        if (k == 0 && cn.domain.empty() && cn.op_type == "Cast" && !dtype_is_float(attr_dtype(cn, "to", kF32)))
          return true;
      }
      return false;
    };
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      int i = *it;
      const Node& node = g_.nodes[size_t(i)];
      if (keep_[size_t(i)]) continue;
      bool from_data = false, feeds_index = false;
      for (ValueId v : node.inputs) from_data |= v != kNoValue && data[size_t(v)];
      if (from_data) continue;
      for (ValueId o : node.outputs) {
        if (!is_f32(o)) continue;
        for (int c : ed.consumers(o)) feeds_index |= index_like_use(c, o);
      }
      if (feeds_index) keep(i, "shape arithmetic feeding an index-like use");
    }

    // The model's head: with keep_output_producers_fp32, the pooling, reduction and reshaping
    // ops that only feed float32-kept nodes stay float32 too, so a classifier's input features
    // are averaged in float32 rather than each rounded to the half type (for bf16 that rounding
    // alone moves ResNet logits by ~1e-2).
    if (opts_.keep_output_producers_fp32) {
      static const std::set<std::string> kHead = {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum",
                                                  "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"};
      for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
        int i = *it;
        const Node& node = g_.nodes[size_t(i)];
        if (keep_[size_t(i)] || !node.domain.empty() || !kHead.count(node.op_type)) continue;
        bool only_kept = true, any = false;
        for (ValueId o : node.outputs) {
          if (!is_f32(o)) continue;
          for (int c : ed.consumers(o)) {
            any = true;
            only_kept &= keep_[size_t(c)] != 0;
          }
        }
        if (any && only_kept) keep(i, "pools or reshapes the input of a float32 output producer");
      }
    }

    if (std::getenv("INGOT_LOG_PASSES"))
      for (size_t i = 0; i < n; ++i)
        if (keep_[i] && involves_f32(int(i)))
          std::fprintf(stderr, "convert_precision: %s stays float32: %s\n", describe_node(g_.nodes[i], int(i)).c_str(),
                       why_[i].c_str());
  }

  bool involves_f32(int i) const {
    const Node& n = g_.nodes[size_t(i)];
    for (ValueId v : n.inputs) if (is_f32(v)) return true;
    for (ValueId v : n.outputs) if (is_f32(v)) return true;
    return false;
  }

  ValueId new_value(ValueId like, const std::string& name_suffix, DType dtype) {
    ValueId id = g_.add_value(g_.value(like).name + name_suffix, dtype);
    g_.value(id).shape = g_.value(like).shape;
    dt_.resize(g_.values.size(), DType::kUndefined);
    dt_[size_t(id)] = dtype;
    return id;
  }

  void add_cast(ValueId from, ValueId to, DType dtype) {
    Node c;
    c.name = g_.value(to).name + "/Cast";
    c.op_type = "Cast";
    c.inputs = {from};
    c.outputs = {to};
    c.attrs.set_int("to", int64_t(dtype));
    g_.nodes.push_back(std::move(c));
  }

  int rewrite(const GraphEditor& ed) {
    size_t nv = g_.values.size(), nn = g_.nodes.size();
    std::vector<std::vector<Use>> need_half(nv), need_f32(nv), free_use(nv);
    for (size_t i = 0; i < nn; ++i) {
      const Node& node = g_.nodes[i];
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        ValueId v = node.inputs[k];
        if (!is_f32(v)) continue;
        Use u{int(i), int(k)};
        if (keep_[i] || input_stays_fp32(node, int(k))) need_f32[size_t(v)].push_back(u);
        else if (free_input(node, int(k))) free_use[size_t(v)].push_back(u);
        else need_half[size_t(v)].push_back(u);
      }
    }
    auto point = [&](const std::vector<Use>& uses, ValueId to) {
      for (const Use& u : uses) g_.nodes[size_t(u.node)].inputs[size_t(u.input)] = to;
    };
    int converted = 0;
    for (ValueId v = 0; v < ValueId(nv); ++v) {
      if (!is_f32(v)) continue;
      int p = ed.producer(v);
      bool by_name = ed.is_graph_output(v) || ed.read_by_subgraph(v);
      bool produced_half = false;
      if (p >= 0 && !keep_[size_t(p)]) {
        const Node& pn = g_.nodes[size_t(p)];
        for (size_t k = 0; k < pn.outputs.size(); ++k)
          if (pn.outputs[k] == v) produced_half = !output_stays_fp32(pn, int(k));
      }
      const auto& half = need_half[size_t(v)];
      const auto& f32 = need_f32[size_t(v)];
      if (auto it = g_.initializers.find(v); it != g_.initializers.end()) {
        if (half.empty()) continue;
        ++converted;
        if (f32.empty() && !by_name) {
          it->second = to_target(it->second, target_);
          g_.value(v).dtype = dt_[size_t(v)] = target_;
        } else {
          Tensor t = to_target(it->second, target_);
          ValueId h = new_value(v, suffix(target_), target_);
          g_.initializers[h] = std::move(t);
          point(half, h);
        }
      } else if (!produced_half) {  // a graph input or a float32 node's output
        if (half.empty()) continue;
        ++converted;
        ValueId h = new_value(v, suffix(target_), target_);
        add_cast(v, h, target_);
        point(half, h);
      } else if (by_name) {  // the float32 name stays, written by a Cast from the half value
        ++converted;
        ValueId h = new_value(v, suffix(target_), target_);
        for (ValueId& o : g_.nodes[size_t(p)].outputs)
          if (o == v) o = h;
        point(half, h);
        point(free_use[size_t(v)], h);
        add_cast(h, v, kF32);
      } else {
        ++converted;
        g_.value(v).dtype = dt_[size_t(v)] = target_;
        if (!f32.empty()) {
          ValueId w = new_value(v, "_fp32", kF32);
          add_cast(v, w, kF32);
          point(f32, w);
        }
      }
    }
    // Dtypes the inference found that the value info lacked (the rest are unchanged). The
    // graph's inputs and outputs keep their value info exactly as it was: that is the interface.
    for (size_t v = 0; v < nv; ++v)
      if (g_.values[v].dtype == DType::kUndefined && dt_[v] != DType::kUndefined && !ed.is_graph_output(ValueId(v)) &&
          std::find(g_.inputs.begin(), g_.inputs.end(), ValueId(v)) == g_.inputs.end())
        g_.values[v].dtype = dt_[v];
    converted_nodes_.assign(nn, 0);
    for (size_t i = 0; i < nn; ++i) converted_nodes_[i] = !keep_[i];
    return converted;
  }

  // Attributes that name float32 in nodes whose output is now half.
  Status fix_attributes() {
    for (size_t i = 0; i < converted_nodes_.size(); ++i) {
      if (!converted_nodes_[i]) continue;
      Node& n = g_.nodes[i];
      if (!n.domain.empty() || n.outputs.empty() || n.outputs[0] == kNoValue) continue;
      if (dt_[size_t(n.outputs[0])] != target_) continue;
      const std::string& op = n.op_type;
      if (op == "Cast") {
        if (!n.attrs.has("to")) return invalid_model("convert_float_precision: " + describe_node(n, int(i)) + ": attribute 'to' is missing");
        if (attr_dtype(n, "to", kF32) == kF32) n.attrs.set_int("to", int64_t(target_));
      } else if (op == "EyeLike") {
        if (attr_dtype(n, "dtype", DType::kUndefined) == kF32) n.attrs.set_int("dtype", int64_t(target_));
      } else if (op == "ConstantOfShape") {
        const Tensor* t = n.attrs.get_tensor("value");
        if (!t) {
          n.attrs.set("value", tensor_attr(Tensor(target_, {1})));
        } else if (t->dtype() == kF32) {
          n.attrs.set("value", tensor_attr(to_target(*t, target_)));
        }
      } else if (op == "Constant") {
        Tensor t;
        if (const Tensor* v = n.attrs.get_tensor("value"); v && v->dtype() == kF32) {
          t = *v;
        } else if (n.attrs.has("value_float")) {
          t = Tensor(kF32, {});
          t.data<float>()[0] = n.attrs.get_float("value_float", 0.f);
        } else if (n.attrs.has("value_floats")) {
          auto f = n.attrs.get_floats("value_floats");
          t = Tensor(kF32, {int64_t(f.size())});
          std::copy(f.begin(), f.end(), t.data<float>());
        } else {
          return invalid_model("convert_float_precision: " + describe_node(n, int(i)) + ": no float32 value attribute to convert");
        }
        Attributes a;
        a.set("value", tensor_attr(to_target(t, target_)));
        n.attrs = std::move(a);
      }
    }
    return Status::ok();
  }

  // Cast(x, to = dtype of x) goes (Identity where its output's name must survive), and
  // Cast(Cast(x_half, to=FLOAT), to=half) reads x_half directly: half -> float32 is exact.
  void remove_redundant_casts() {
    for (int round = 0; round < 8; ++round) {
      GraphEditor ed(g_);
      bool changed = false;
      for (int i = 0; i < ed.num_nodes(); ++i) {
        if (!ed.alive(i)) continue;
        const Node& n = ed.node(i);
        if (!n.domain.empty() || n.op_type != "Cast" || n.inputs.size() != 1 || n.outputs.size() != 1) continue;
        ValueId in = n.inputs[0], out = n.outputs[0];
        if (in == kNoValue || out == kNoValue) continue;
        bool by_name = ed.is_graph_output(out) || ed.read_by_subgraph(out);
        DType to = attr_dtype(n, "to", DType::kUndefined);
        if (ed.consumers(out).empty() && !by_name) {  // dead: nothing reads it any more
          ed.remove_node(i);
          changed = true;
          continue;
        }
        DType in_dt = g_.value(in).dtype;
        if (dtype_is_float(to) && in_dt == to) {
          if (by_name) {
            Node& w = ed.node(i);
            w.op_type = "Identity";
            w.attrs = Attributes();
          } else {
            ed.replace_uses(out, in);
            ed.remove_node(i);
          }
          changed = true;
          continue;
        }
        int p = ed.producer(in);
        if (p >= 0 && ed.alive(p) && ed.node(p).domain.empty() && ed.node(p).op_type == "Cast" &&
            attr_dtype(ed.node(p), "to", DType::kUndefined) == kF32 && !ed.node(p).inputs.empty() &&
            ed.node(p).inputs[0] != kNoValue && g_.value(ed.node(p).inputs[0]).dtype == to &&
            (to == DType::kFloat16 || to == DType::kBFloat16)) {
          ValueId x = ed.node(p).inputs[0];
          if (by_name) {
            Node& w = ed.node(i);
            w.op_type = "Identity";
            w.attrs = Attributes();
            w.inputs[0] = x;
          } else {
            ed.replace_uses(out, x);
            ed.remove_node(i);
          }
          changed = true;
        }
      }
      ed.commit();
      if (!changed) break;
    }
  }

  Model& m_;
  Graph& g_;
  DType target_;
  const PrecisionOptions& opts_;
  std::vector<int> order_;
  std::vector<DType> dt_;
  std::vector<char> keep_;
  std::vector<std::string> why_;
  std::vector<char> converted_nodes_;
};

}  // namespace

Expected<int> convert_float_precision(Model& model, const PrecisionOptions& opts) {
  return Converter(model, opts).run();
}

}  // namespace ingot
