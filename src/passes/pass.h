// Optimizer passes. Each pass lives in its own file and registers itself by name with
// INGOT_REGISTER_PASS; pipeline.cc fixes the order they run in (with the reason for each
// ordering constraint) and lets users disable any of them by name.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ir/graph.h"
#include <utility>

#include "runtime/executor.h"

namespace ingot {

// What a pass may ask about the model it rewrites.
using ShapeBinding = std::map<std::string, Shape>;

class PassContext {
 public:
  // `bindings`: the input shapes the engine must serve, opt first, then the other corners of
  // every profile (min, max). Empty when no shapes are bound.
  // `device`: the engine's ("cpu", "cuda"), for rewrites that pay on one device only.
  explicit PassContext(std::vector<ShapeBinding> bindings, std::string device = "cpu")
      : bindings_(std::move(bindings)), device_(std::move(device)) {}

  const std::vector<ShapeBinding>& bindings() const { return bindings_; }
  const std::string& device() const { return device_; }
  // The shapes the graph is optimized for (the first binding), possibly empty.
  const ShapeBinding& shapes() const {
    static const ShapeBinding kNone;
    return bindings_.empty() ? kNone : bindings_[0];
  }
  // Dtype and shape of every value of the graph as it is now, for the bound shapes (with no
  // shapes bound: for unknown dims set to 1 — good for structural questions such as head
  // counts, not for sizes); null when inference fails. Value ids stay valid across rewrites, so a pass may keep using
  // the result for values that still exist; values it creates have no entry.
  const std::vector<ValueMeta>* metas(const Model& m);
  // Called by the pipeline after every pass that changed the graph.
  void invalidate() { cached_ = false; }
  // What a pass wants its user to know (what it matched, why something stayed unfused); the
  // pipeline hands each pass's notes to its PassReport (`ingot build --verbose` prints them).
  void note(std::string text) { notes_.push_back(std::move(text)); }
  std::vector<std::string> take_notes() { return std::exchange(notes_, {}); }

 private:
  std::vector<ShapeBinding> bindings_;
  std::string device_;
  std::vector<std::string> notes_;
  bool cached_ = false;
  std::unique_ptr<std::vector<ValueMeta>> metas_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Rewrites model.graph in place; returns how many rewrites it made.
  virtual Expected<int> run(Model& model, PassContext& ctx) const = 0;
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;
bool register_pass(const std::string& name, PassFactory factory);
const std::map<std::string, PassFactory>& registered_passes();

// The optimizer runs in two stages with precision conversion between them (engine.cc).
enum class PassStage { kBeforePrecision, kAfterPrecision };

struct OptimizeOptions {
  PassStage stage = PassStage::kBeforePrecision;
  std::set<std::string> disabled;          // pass names; INGOT_DISABLE_PASSES=a,b adds more
  // Input shapes to serve: opt first, then each profile's min and max. Empty: none bound.
  std::vector<ShapeBinding> bindings;
  std::string device = "cpu";  // the engine's device (PassContext::device())
};

struct PassReport {
  std::string name;
  int rewrites = 0;
  size_t nodes_before = 0, nodes_after = 0;
  bool disabled = false;
  std::vector<std::string> notes;  // PassContext::note()s of this pass
};

// The pass names of one stage in the order they run.
const std::vector<std::string>& pass_order(PassStage stage = PassStage::kBeforePrecision);
// Unbound dims set to 1: enough for structural questions (head counts, hidden sizes). Inputs of
// unknown rank are left out.
ShapeBinding probe_binding(const Model& m);
// Shape inference with distinct sizes for the unbound input dims, so batch and sequence differ:
// one size per symbol, else (after a failure, for exporters that name equal dims differently)
// one per axis position. A dim that every one of `bindings` (PassContext::bindings()) fixes to the
// same size keeps it. nullopt when nothing is unbound or both fail; each failure's message is
// appended to `failures` when given.
std::optional<std::vector<ValueMeta>> infer_distinct(const Model& m, const std::vector<ShapeBinding>& bindings,
                                                     std::vector<std::string>* failures = nullptr);
// Shape inference of `m` for one binding (declared static dims fill in unbound inputs).
Expected<std::vector<ValueMeta>> infer_with(const Model& m, const ShapeBinding& shapes);
// Runs every enabled pass of opts.stage in order on model.graph.
Expected<std::vector<PassReport>> optimize(Model& model, const OptimizeOptions& opts);

}  // namespace ingot

#define INGOT_REGISTER_PASS(name, PassClass)                                               \
  static const bool INGOT_CONCAT(ingot_pass_, __COUNTER__) = ::ingot::register_pass( \
      name, [] { return std::unique_ptr<::ingot::Pass>(new PassClass()); })
