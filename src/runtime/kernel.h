// The kernel contract. Every op is a class with two steps, both given concrete shapes:
//   infer():   output dtypes and shapes from input dtypes/shapes (and input values where the
//              executor knows them: always at run time, for constants at build time). This is
//              ingot's shape inference; the executor allocates outputs from it.
//   compute(): fill the outputs.
// init() parses and validates attributes once, when the model is loaded, so attribute errors
// appear before any run. Kernels register next to their code with INGOT_REGISTER_KERNEL.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "ir/graph.h"

namespace ingot {

// What infer() knows about one input.
struct InputMeta {
  bool present = false;
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* value = nullptr;  // known contents, or null
};

// What infer() says about one output.
struct OutputMeta {
  DType dtype = DType::kUndefined;
  Shape shape;
  bool dynamic = false;  // shape depends on input data unknown before running (NonZero, ...)
  bool set = false;
};

class InferContext {
 public:
  InferContext(const Node& node, std::vector<InputMeta> inputs, int num_outputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(size_t(num_outputs)) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return int(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[size_t(i)].present; }
  DType input_dtype(int i) const { return inputs_[size_t(i)].dtype; }
  const Shape& input_shape(int i) const { return inputs_[size_t(i)].shape; }
  int input_rank(int i) const { return int(inputs_[size_t(i)].shape.size()); }
  // The input's contents when known now, else null. Ops whose output shape depends on an
  // input's values (Reshape's shape, Slice's starts) read it here; when it is null they
  // must call set_output_dynamic.
  const Tensor* input_value(int i) const { return has_input(i) ? inputs_[size_t(i)].value : nullptr; }

  // The node's outputs. A kernel may describe more (TopK's indices on a node that lists only
  // its values): those are kept past num_outputs(), so that compute() has somewhere to write
  // them, and dropped by the executor.
  int num_outputs() const { return int(node_.outputs.size()); }
  bool has_output(int i) const { return i < num_outputs() && node_.outputs[size_t(i)] != kNoValue; }
  void set_output(int i, DType dtype, Shape shape) { slot(i) = OutputMeta{dtype, std::move(shape), false, true}; }
  void set_output_dynamic(int i, DType dtype) { slot(i) = OutputMeta{dtype, {}, true, true}; }
  const std::vector<OutputMeta>& outputs() const { return outputs_; }

 private:
  OutputMeta& slot(int i) {
    if (size_t(i) >= outputs_.size()) outputs_.resize(size_t(i) + 1);
    return outputs_[size_t(i)];
  }

  const Node& node_;
  std::vector<InputMeta> inputs_;
  std::vector<OutputMeta> outputs_;
};

// Runs a subgraph (If/Loop/Scan bodies) with the given formal inputs; captured outer values
// are resolved by the executor.
using SubgraphRunner =
    std::function<Expected<std::vector<Tensor>>(const Graph& body, const std::vector<Tensor>& inputs)>;

// Where an output lives: a slot of the context's activation arena (static memory plan), or
// null for a fresh heap buffer.
struct OutputSlot {
  void* data = nullptr;
  size_t capacity = 0;
  // Not zero-filled: the slot holds an input the kernel overwrites, or the kernel writes every
  // element of its outputs (OpKernel::writes_every_output_element).
  bool keep_contents = false;
};

class ComputeContext {
 public:
  ComputeContext(const Node& node, std::vector<const Tensor*> inputs, std::vector<OutputMeta> metas,
                 SubgraphRunner run_subgraph, std::vector<OutputSlot> slots = {})
      : node_(node), inputs_(std::move(inputs)), metas_(std::move(metas)),
        outputs_(metas_.size()), run_subgraph_(std::move(run_subgraph)), slots_(std::move(slots)) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return int(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[size_t(i)] != nullptr; }
  const Tensor& input(int i) const { return *inputs_[size_t(i)]; }

  // The node's outputs; outputs_ also holds any that infer() described past them (InferContext),
  // computed and dropped. Any other output a kernel writes goes to `unlisted_` (allocate_output()
  // must size it), also dropped.
  int num_outputs() const { return int(node_.outputs.size()); }
  bool has_output(int i) const { return i < num_outputs() && node_.outputs[size_t(i)] != kNoValue; }
  // The output buffer, allocated on first use with the shape infer() gave, zero-filled.
  Tensor& output(int i) {
    Tensor& t = slot(i);
    if (!t.defined()) {
      const OutputMeta m = size_t(i) < metas_.size() ? metas_[size_t(i)] : OutputMeta{};
      t = make(i, m.dtype, m.shape);
    }
    return t;
  }
  // For outputs infer() marked dynamic: allocate now that the shape is known.
  Tensor& allocate_output(int i, DType dtype, Shape shape) {
    Tensor& t = slot(i);
    t = make(i, dtype, std::move(shape));
    return t;
  }
  // Makes output i an existing tensor (a view of an input for Reshape/Identity/Squeeze).
  void set_output(int i, Tensor t) { slot(i) = std::move(t); }

  Expected<std::vector<Tensor>> run_subgraph(const Graph& body, const std::vector<Tensor>& inputs) const {
    if (!run_subgraph_) return internal_error("subgraphs cannot run in this context");
    return run_subgraph_(body, inputs);
  }

  std::vector<Tensor>& outputs() { return outputs_; }

 private:
  // outputs_ never grows, so that a reference a kernel holds to one output stays valid while it
  // allocates the next.
  Tensor& slot(int i) { return size_t(i) < outputs_.size() ? outputs_[size_t(i)] : unlisted_[i]; }
  Tensor make(int i, DType dtype, Shape shape) {
    if (size_t(i) < slots_.size() && slots_[size_t(i)].data) {
      size_t bytes = size_t(shape_numel(shape)) * dtype_size(dtype);
      if (bytes <= slots_[size_t(i)].capacity) {
        if (!slots_[size_t(i)].keep_contents) std::memset(slots_[size_t(i)].data, 0, bytes);
        return Tensor::wrap(dtype, std::move(shape), slots_[size_t(i)].data, nullptr);
      }
    }
    return Tensor(dtype, std::move(shape));
  }

  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<OutputMeta> metas_;
  std::vector<Tensor> outputs_;
  std::map<int, Tensor> unlisted_;
  SubgraphRunner run_subgraph_;
  std::vector<OutputSlot> slots_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // Parse attributes; `opset` is the model's version of the node's domain.
  virtual Status init(const Node& node, int opset) { (void)node; (void)opset; return Status::ok(); }
  // Called once after init(), before any run, with the contents of inputs that are constant
  // (initializers; null for the others). Kernels pre-pack weights here (oneDNN's blocked
  // layouts, bf16 copies) and at compute() use the packed form when the input's data pointer
  // is the one they packed: constants keep their buffer for the engine's lifetime.
  virtual Status prepare(const std::vector<const Tensor*>& constant_inputs) {
    (void)constant_inputs;
    return Status::ok();
  }
  virtual Status infer(InferContext& ctx) const = 0;
  virtual Status compute(ComputeContext& ctx) const = 0;
  // False for inputs whose contents compute() never reads (Shape, Size): lets the executor
  // fold such nodes from shapes alone.
  virtual bool reads_input_data(int input) const { (void)input; return true; }
  // False for ops whose outputs are not a function of their inputs (random ops).
  virtual bool deterministic() const { return true; }
  // The input whose buffer output `output` may share (Reshape-like ops that set_output a view),
  // or -1. The memory planner gives both one buffer whose lifetime covers both values.
  virtual int output_aliases_input(int output) const { (void)output; return -1; }
  // The input whose buffer output `output` may be computed into when that input is read by
  // nothing later (in-place), or -1. Only for kernels that write every output element after
  // reading the same element of that input, with the same shape and dtype (elementwise maps).
  virtual int output_may_overwrite_input(int output) const { (void)output; return -1; }
  // True for kernels that write every element of every output they produce, on every path:
  // their arena slots are not zero-filled before compute() (for ResNet-50 that fill was a pass
  // over ~43 MB per batch-1 run).
  virtual bool writes_every_output_element() const { return false; }
};

using KernelFactory = std::function<Expected<std::unique_ptr<OpKernel>>(const Node& node, int opset)>;

// Maps (backend, domain, op_type) to a factory. Kernels add themselves at static-init time.
class KernelRegistry {
 public:
  static KernelRegistry& instance();
  bool add(const std::string& backend, const std::string& domain, const std::string& op_type,
           KernelFactory factory);
  const KernelFactory* find(const std::string& backend, const std::string& domain,
                            const std::string& op_type) const;
  std::vector<std::string> ops(const std::string& backend) const;  // "domain:op", sorted

 private:
  std::map<std::string, KernelFactory> map_;
};

// Builds the kernel for a node: finds the factory and runs init(). The error names the node.
Expected<std::unique_ptr<OpKernel>> create_kernel(const std::string& backend, const Node& node,
                                                  int node_index, int opset);

template <class K>
Expected<std::unique_ptr<OpKernel>> make_kernel(const Node& node, int opset) {
  auto k = std::make_unique<K>();
  INGOT_RETURN_IF_ERROR(k->init(node, opset));
  return std::unique_ptr<OpKernel>(std::move(k));
}

}  // namespace ingot

// Registers class K (default constructible, derived from OpKernel) for a CPU op:
//   INGOT_REGISTER_KERNEL(cpu, "", Relu, ReluKernel);
#define INGOT_REGISTER_KERNEL(backend, domain, op, K)                                     \
  static const bool INGOT_CONCAT(ingot_reg_, __COUNTER__) =                               \
      ::ingot::KernelRegistry::instance().add(#backend, domain, #op, &::ingot::make_kernel<K>)
