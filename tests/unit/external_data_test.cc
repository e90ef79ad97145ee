// ONNX models whose weights live in separate files (external data), as torch.onnx writes models
// over 2 GB: loaded from the file beside the model, at the recorded offset.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "onnx/onnx_pb.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace ingot;

namespace {

// y = x + W, W = [1, 2, 3, 4] stored in weights.bin at byte 16.
fs::path write_model(const fs::path& dir, int64_t opset, int64_t ir_version) {
  fs::create_directories(dir);
  {
    std::ofstream w(dir / "weights.bin", std::ios::binary);
    std::string pad(16, '\0');
    float vals[4] = {1, 2, 3, 4};
    w.write(pad.data(), 16);
    w.write(reinterpret_cast<const char*>(vals), sizeof vals);
  }
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("external");
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("W");
  n->add_output("y");
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : {std::pair{"location", "weights.bin"}, {"offset", "16"}, {"length", "16"}}) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  for (const char* name : {"x", "y"}) {
    auto* vi = name[0] == 'x' ? g->add_input() : g->add_output();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
  }
  fs::path p = dir / "model.onnx";
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

TEST(ExternalData, LoadsWeightsFromTheFileBesideTheModel) {
  // Opset 7 / IR 3 up to opset 21 / IR 10: loading is never gated on libonnx's checker.
  for (auto [opset, ir] : {std::pair<int64_t, int64_t>{7, 3}, {17, 8}, {21, 10}}) {
    fs::path dir = fs::temp_directory_path() / ("ingot_ext_" + std::to_string(::getpid()) + "_" + std::to_string(opset));
    fs::path model = write_model(dir, opset, ir);
    auto e = Engine::load(model.string());
    ASSERT_TRUE(e.has_value()) << e.status().message();
    Tensor x(DType::kFloat32, {4});
    for (int i = 0; i < 4; ++i) x.data<float>()[i] = 10.f * float(i);
    auto out = (*e)->create_context()->run({{"x", x}});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    for (int i = 0; i < 4; ++i) EXPECT_EQ((*out)[0].tensor.data<float>()[i], 10.f * float(i) + float(i + 1));
    fs::remove_all(dir);
  }
}

TEST(ExternalData, ShortFileIsAnErrorNamingTheTensor) {
  fs::path dir = fs::temp_directory_path() / ("ingot_ext_short_" + std::to_string(::getpid()));
  fs::path model = write_model(dir, 17, 8);
  fs::resize_file(dir / "weights.bin", 20);
  auto e = Engine::load(model.string());
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("tensor 'W'"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("expected at least 32"), std::string::npos) << e.status().message();
  fs::remove_all(dir);
}

}  // namespace
