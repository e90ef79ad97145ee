// Engine files: a round trip gives the same outputs; every kind of damaged or foreign file is
// refused with one clear error.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/npy.h"
#include "plan/engine_file.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace ingot;

namespace {

std::string fixture(const std::string& rel) {
  return (fs::path(INGOT_SOURCE_DIR) / "tests" / "models" / rel).string();
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("ingot_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_all(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

class EngineFile : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions eo;
    Profile p;
    p.min = {{"input_ids", {1, 1}}, {"attention_mask", {1, 1}}};
    p.opt = {{"input_ids", {2, 16}}, {"attention_mask", {2, 16}}};
    p.max = {{"input_ids", {4, 32}}, {"attention_mask", {4, 32}}};
    eo.profiles.push_back(p);
    auto e = Engine::load(fixture("distilbert/model.torchscript.onnx"), eo);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    engine_ = *e;
    path_ = temp_path("distilbert.ingot");
    ASSERT_TRUE(engine_->save(path_).is_ok());
    bytes_ = read_all(path_);
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string load_error(const std::string& bytes) {
    std::string p = temp_path("damaged.ingot");
    write_all(p, bytes);
    auto e = Engine::load(p);
    std::remove(p.c_str());
    return e.has_value() ? "" : e.status().message();
  }

  std::shared_ptr<Engine> engine_;
  std::string path_, bytes_;
};

TEST_F(EngineFile, RoundTripGivesTheSameOutputs) {
  auto loaded = Engine::load(path_);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  auto inputs = read_npz(fixture("distilbert/inputs.npz"));
  ASSERT_TRUE(inputs.has_value());
  auto a = engine_->create_context()->run(*inputs);
  auto b = (*loaded)->create_context()->run(*inputs);
  ASSERT_TRUE(a.has_value() && b.has_value());
  const Tensor &x = (*a)[0].tensor, &y = (*b)[0].tensor;
  ASSERT_EQ(x.shape(), y.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(x.data<float>()[i], y.data<float>()[i]);
  EXPECT_EQ((*loaded)->profiles().size(), 1u);
  EXPECT_EQ((*loaded)->model().graph.nodes.size(), engine_->model().graph.nodes.size());
}

TEST_F(EngineFile, RefusesShapesOutsideTheProfile) {
  auto loaded = Engine::load(path_);
  ASSERT_TRUE(loaded.has_value());
  std::map<std::string, Tensor> in;
  in["input_ids"] = Tensor(DType::kInt64, {1, 64});
  in["attention_mask"] = Tensor(DType::kInt64, {1, 64});
  auto r = (*loaded)->create_context()->run(in);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("'attention_mask' has shape 1x64"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("1x1..4x32"), std::string::npos) << r.status().message();
}

TEST_F(EngineFile, RefusesATruncatedFile) {
  std::string m = load_error(bytes_.substr(0, bytes_.size() / 2));
  EXPECT_NE(m.find("truncated or corrupt"), std::string::npos) << m;
  m = load_error(bytes_.substr(0, 40));
  EXPECT_NE(m.find("truncated"), std::string::npos) << m;
}

TEST_F(EngineFile, RefusesACorruptedFile) {
  std::string damaged = bytes_;
  damaged[damaged.size() - 100] ^= 0x5a;  // a weight byte
  std::string m = load_error(damaged);
  EXPECT_NE(m.find("checksum mismatch"), std::string::npos) << m;
}

TEST_F(EngineFile, RefusesAnotherFormatVersion) {
  std::string other = bytes_;
  other[8] = 7;
  std::string m = load_error(other);
  EXPECT_NE(m.find("engine format version 7"), std::string::npos) << m;
}

TEST_F(EngineFile, RefusesAnotherDeviceOrIsa) {
  // Rewrite the manifest's ISA and fix the checksum, as a file from another machine would be.
  std::string other = bytes_;
  size_t at = other.find("\"isa\":\"x86-64-v3\"");
  ASSERT_NE(at, std::string::npos);
  other.replace(at, 17, "\"isa\":\"x86-64-v9\"");
  std::memset(&other[64], 0, 8);
  uint64_t h = hash64(other.data(), other.size());
  std::memcpy(&other[64], &h, 8);
  std::string m = load_error(other);
  EXPECT_NE(m.find("needs a CPU with x86-64-v9"), std::string::npos) << m;

  other = bytes_;
  at = other.find("\"device\":\"cpu\"");
  ASSERT_NE(at, std::string::npos);
  other.replace(at, 14, "\"device\":\"gpu\"");
  std::memset(&other[64], 0, 8);
  h = hash64(other.data(), other.size());
  std::memcpy(&other[64], &h, 8);
  m = load_error(other);
  EXPECT_NE(m.find("built for device 'gpu'"), std::string::npos) << m;
}

TEST_F(EngineFile, RefusesAFileThatIsNotAnEngine) {
  std::string m = load_error(std::string("INGOTENG") + std::string(200, 'x'));
  EXPECT_FALSE(m.empty());
}

}  // namespace
