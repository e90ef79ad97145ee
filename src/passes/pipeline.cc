// The optimizer's pass order. Each line says why a pass sits where it does.
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "passes/pass.h"

namespace ingot {

const std::vector<std::string>& pass_order(PassStage stage) {
  // After precision conversion (engine.cc runs it between the two stages): passes that fold
  // what conversion adds.
  static const std::vector<std::string> after_precision = {
      // An output that --io-precision fp16 retyped ends in an Identity once conversion finds its
      // Cast redundant: the product before it writes the output itself, so the fusions below
      // see it.
      "eliminate_identity",
      // A half-precision product's float32 output Cast becomes the product's own output dtype.
      "fuse_output_cast",
      // CUDA only: a classifier's LayerNorm, two products and activation as one op; after the
      // Cast folding above, so the logits' float32 output is the second product's own.
      "fuse_classifier_head",
  };
  if (stage == PassStage::kAfterPrecision) return after_precision;
  static const std::vector<std::string> order = {
      // Identity/Dropout first: they hide producer-consumer links every matcher below needs.
      "eliminate_identity",
      // Folding turns Constant nodes and shape subgraphs into initializers, so patterns see
      // constant weights, scales and reshape targets.
      "fold_constants",
      // Conv+BatchNorm folds weights before activation fusion looks at Conv outputs.
      "fuse_conv_bn",
      "fuse_conv_activation",
      // GELU before linear fusion: MatMul+Add+Gelu becomes one op only once Gelu is one node.
      "fuse_gelu",
      // LayerNorm before attention: the attention matcher starts from normalized inputs.
      "fuse_layer_norm",
      // Attention before linear fusion: it consumes the Q/K/V MatMul+Add chains itself.
      "fuse_attention",
      // Then the fused ops' masks lose the broadcasts (Expand, And with true) around them,
      // before elementwise fusion would merge those into one broadcasting kernel.
      "simplify_attention_mask",
      "fuse_linear",
      // Skip-LayerNorm after linear fusion: the residual Add it folds follows a fused linear.
      "fuse_skip_layer_norm",
      // Embedding lookups + sum + LayerNorm: matches the SkipLayerNorm the pass above made.
      "fuse_embed_layer_norm",
      // Once the layers are fused ops: a Gather of a few rows (a classifier's first token) moves
      // above the fused linear and LayerNorm ops of the last layer, which then compute those rows.
      "gather_rows_early",
      // CUDA only: each skip-LayerNorm's residual add moves into the GEMM that makes one of its
      // operands; after gather_rows_early, which moves SkipLayerNorms but not residual inputs.
      "fold_residual_into_product",
      // CUDA only: a LayerNorm of a product's output goes into the product's epilogue; after the
      // pass above, whose LayerNormalizations it takes; before fuse_classifier_head (next stage),
      // whose LayerNorm it leaves alone.
      "fold_layer_norm_into_product",
      // After every pattern fusion, so it only takes the elementwise nodes no fused op claimed.
      "fuse_elementwise",
      // Last: remove whatever the rewrites left unread.
      "eliminate_dead_code",
  };
  return order;
}

static std::map<std::string, PassFactory>& pass_registry() {
  static std::map<std::string, PassFactory> r;
  return r;
}

bool register_pass(const std::string& name, PassFactory factory) {
  pass_registry()[name] = std::move(factory);
  return true;
}

const std::map<std::string, PassFactory>& registered_passes() { return pass_registry(); }

// The size every binding gives axis `axis` of input `name`; nullopt when they differ or none do.
static std::optional<int64_t> fixed_by_bindings(const std::vector<ShapeBinding>& bindings, const std::string& name,
                                                size_t axis) {
  std::optional<int64_t> size;
  for (const ShapeBinding& b : bindings) {
    auto it = b.find(name);
    if (it == b.end() || axis >= it->second.size()) return std::nullopt;
    if (size && *size != it->second[axis]) return std::nullopt;
    size = it->second[axis];
  }
  return size;
}

// torch.export names equal dims differently (s33, s50): by_axis gives them equal sizes anyway.
// A dim every binding fixes to one size (a profile of one sequence length) keeps that size:
// folding has already specialised the graph to it (a position-embedding slice of 128 rows).
static std::optional<ShapeBinding> distinct_probe(const Model& m, const std::vector<ShapeBinding>& bindings,
                                                  bool by_axis) {
  ShapeBinding b;
  std::map<std::string, int64_t> sym;
  const int64_t sizes[] = {3, 5, 7, 11, 13, 17, 19, 23};
  size_t next = 0;
  bool dynamic = false;
  for (ValueId id : m.graph.inputs) {
    const ValueInfo& v = m.graph.value(id);
    if (!v.shape) return std::nullopt;
    Shape s;
    for (const Dim& d : *v.shape) {
      if (d.known()) { s.push_back(d.value); continue; }
      if (auto fixed = fixed_by_bindings(bindings, v.name, s.size())) { s.push_back(*fixed); continue; }
      dynamic = true;
      if (by_axis) {
        s.push_back(sizes[s.size() % 8]);
        continue;
      }
      auto it = d.symbol.empty() ? sym.end() : sym.find(d.symbol);
      int64_t n = it != sym.end() ? it->second : sizes[next++ % 8];
      if (!d.symbol.empty()) sym[d.symbol] = n;
      s.push_back(n);
    }
    b[v.name] = s;
  }
  if (!dynamic) return std::nullopt;
  return b;
}

Expected<std::vector<ValueMeta>> infer_with(const Model& m, const ShapeBinding& shapes);

std::optional<std::vector<ValueMeta>> infer_distinct(const Model& m, const std::vector<ShapeBinding>& bindings,
                                                     std::vector<std::string>* failures) {
  for (bool by_axis : {false, true}) {
    auto b = distinct_probe(m, bindings, by_axis);
    if (!b) return std::nullopt;
    auto r = infer_with(m, *b);
    if (r) return std::move(*r);
    if (failures)
      failures->push_back(std::string("distinct-size probe ") + (by_axis ? "by axis" : "by symbol") +
                          " failed: " + r.status().message());
  }
  return std::nullopt;
}

Expected<std::vector<ValueMeta>> infer_with(const Model& m, const ShapeBinding& shapes) {
  std::vector<ValueMeta> inputs;
  for (ValueId id : m.graph.inputs) {
    const ValueInfo& v = m.graph.value(id);
    ValueMeta vm;
    vm.known = true;
    vm.dtype = v.dtype;
    auto it = shapes.find(v.name);
    if (it != shapes.end()) {
      vm.shape = it->second;
    } else if (v.shape) {
      for (const Dim& d : *v.shape) {
        if (!d.known()) return invalid_argument("no shape bound for input '" + v.name + "' " + sym_shape_str(*v.shape));
        vm.shape.push_back(d.value);
      }
    } else {
      return invalid_argument("no shape bound for input '" + v.name + "'");
    }
    inputs.push_back(vm);
  }
  auto ex = GraphExecutor::create(m.graph, m.opsets, "cpu", /*prepare_constants=*/false);
  if (!ex) return ex.status();
  return (*ex)->infer(inputs);
}

ShapeBinding probe_binding(const Model& m) {
  ShapeBinding b;
  for (ValueId id : m.graph.inputs) {
    const ValueInfo& v = m.graph.value(id);
    if (!v.shape) continue;  // rank unknown: no probe (inference then fails: nothing is folded)
    Shape s;
    for (const Dim& d : *v.shape) s.push_back(d.known() ? d.value : 1);
    b[v.name] = s;
  }
  return b;
}

const std::vector<ValueMeta>* PassContext::metas(const Model& m) {
  if (cached_) return metas_.get();
  cached_ = true;
  metas_.reset();
  auto r = infer_with(m, bindings_.empty() ? probe_binding(m) : shapes());
  if (r) metas_ = std::make_unique<std::vector<ValueMeta>>(std::move(*r));
  return metas_.get();
}

Expected<std::vector<PassReport>> optimize(Model& model, const OptimizeOptions& opts) {
  std::set<std::string> disabled = opts.disabled;
  if (const char* env = std::getenv("INGOT_DISABLE_PASSES")) {
    std::stringstream ss(env);
    std::string name;
    while (std::getline(ss, name, ',')) if (!name.empty()) disabled.insert(name);
  }
  for (const auto& name : disabled) {
    bool known = false;
    std::string all;
    for (PassStage s : {PassStage::kBeforePrecision, PassStage::kAfterPrecision})
      for (const auto& p : pass_order(s)) {
        known |= p == name;
        all += (all.empty() ? "" : ", ") + p;
      }
    if (!known) return invalid_argument("unknown pass '" + name + "' (passes: " + all + ")");
  }
  // Fused nodes live in ingot's own domain.
  model.opsets["ingot"] = 1;
  PassContext ctx(opts.bindings, opts.device);
  std::vector<PassReport> reports;
  for (const auto& name : pass_order(opts.stage)) {
    PassReport r;
    r.name = name;
    r.nodes_before = r.nodes_after = model.graph.nodes.size();
    auto it = registered_passes().find(name);
    if (disabled.count(name) || it == registered_passes().end()) {
      r.disabled = true;
      reports.push_back(r);
      continue;
    }
    auto pass = it->second();
    auto n = pass->run(model, ctx);
    if (!n) return n.status().with_context("pass " + name + ": ");
    r.rewrites = *n;
    r.nodes_after = model.graph.nodes.size();
    r.notes = ctx.take_notes();
    if (std::getenv("INGOT_LOG_PASSES"))
      for (const auto& l : r.notes) std::cerr << name << ": " << l << "\n";
    if (*n) ctx.invalidate();
    reports.push_back(r);
  }
  return reports;
}

}  // namespace ingot
