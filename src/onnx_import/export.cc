#include "onnx_import/export.h"

#include "onnx/onnx_pb.h"
#include "onnx_import/tensor_proto.h"

namespace ingot {
namespace {

void value_info(const ValueInfo& v, onnx::ValueInfoProto& vp) {
  vp.set_name(v.name);
  if (v.dtype == DType::kUndefined) return;
  auto* tt = vp.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(int32_t(v.dtype));
  if (!v.shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *v.shape) {
    auto* dp = shape->add_dim();
    if (d.known()) dp->set_dim_value(d.value);
    else if (!d.symbol.empty()) dp->set_dim_param(d.symbol);
  }
}

Status graph_to_proto(const Graph& g, onnx::GraphProto& gp, const WeightSink& weights);

Status attribute_to_proto(const std::string& name, const Attribute& a, onnx::AttributeProto& ap,
                          const WeightSink& weights) {
  using AP = onnx::AttributeProto;
  ap.set_name(name);
  switch (a.kind) {
    case Attribute::Kind::kFloat: ap.set_type(AP::FLOAT); ap.set_f(a.f); break;
    case Attribute::Kind::kInt: ap.set_type(AP::INT); ap.set_i(a.i); break;
    case Attribute::Kind::kString: ap.set_type(AP::STRING); ap.set_s(a.s); break;
    case Attribute::Kind::kFloats: ap.set_type(AP::FLOATS); for (float f : a.floats) ap.add_floats(f); break;
    case Attribute::Kind::kInts: ap.set_type(AP::INTS); for (int64_t i : a.ints) ap.add_ints(i); break;
    case Attribute::Kind::kStrings: ap.set_type(AP::STRINGS); for (const auto& s : a.strings) ap.add_strings(s); break;
    case Attribute::Kind::kTensor: ap.set_type(AP::TENSOR); tensor_to_proto(a.t, "", *ap.mutable_t()); break;
    case Attribute::Kind::kTensors:
      ap.set_type(AP::TENSORS);
      for (const Tensor& t : a.tensors) tensor_to_proto(t, "", *ap.add_tensors());
      break;
    case Attribute::Kind::kGraph:
      ap.set_type(AP::GRAPH);
      INGOT_RETURN_IF_ERROR(graph_to_proto(*a.g, *ap.mutable_g(), weights));
      break;
    case Attribute::Kind::kGraphs:
      ap.set_type(AP::GRAPHS);
      for (const auto& g : a.graphs) INGOT_RETURN_IF_ERROR(graph_to_proto(*g, *ap.add_graphs(), weights));
      break;
  }
  return Status::ok();
}

Status graph_to_proto(const Graph& g, onnx::GraphProto& gp, const WeightSink& weights) {
  gp.set_name(g.name);
  for (const auto& [id, t] : g.initializers) {
    auto* tp = gp.add_initializer();
    tp->set_name(g.value(id).name);
    tp->set_data_type(int32_t(t.dtype()));
    for (int64_t d : t.shape()) tp->add_dims(d);
    tp->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* e = tp->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", kEngineWeightsLocation);
    add("offset", std::to_string(weights(t)));
    add("length", std::to_string(t.nbytes()));
  }
  for (ValueId id : g.inputs) value_info(g.value(id), *gp.add_input());
  for (ValueId id : g.outputs) value_info(g.value(id), *gp.add_output());
  for (const Node& n : g.nodes) {
    auto* np = gp.add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    np->set_domain(n.domain);
    for (ValueId v : n.inputs) np->add_input(v == kNoValue ? "" : g.value(v).name);
    for (ValueId v : n.outputs) np->add_output(v == kNoValue ? "" : g.value(v).name);
    for (const auto& [name, a] : n.attrs.all()) INGOT_RETURN_IF_ERROR(attribute_to_proto(name, a, *np->add_attribute(), weights));
  }
  return Status::ok();
}

}  // namespace

Expected<std::string> serialize_model(const Model& m, const WeightSink& weights) {
  onnx::ModelProto mp;
  mp.set_ir_version(m.ir_version);
  mp.set_producer_name(m.producer_name);
  mp.set_producer_version(m.producer_version);
  mp.set_domain(m.domain);
  mp.set_model_version(m.model_version);
  for (const auto& [d, v] : m.opsets) {
    auto* o = mp.add_opset_import();
    o->set_domain(d);
    o->set_version(v);
  }
  for (const auto& [k, v] : m.metadata) {
    auto* p = mp.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  INGOT_RETURN_IF_ERROR(graph_to_proto(m.graph, *mp.mutable_graph(), weights));
  std::string out;
  if (!mp.SerializeToString(&out)) return internal_error("serializing the optimized graph failed");
  return out;
}

}  // namespace ingot
