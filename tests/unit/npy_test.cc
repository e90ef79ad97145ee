// NumPy .npy/.npz reading and writing (src/io/npy.h). The fixtures below are bytes NumPy 1.24
// wrote (np.save, np.lib.format.write_array with versions 2.0/3.0, np.savez and
// np.savez_compressed); the last test also has Debian's /usr/bin/python3 read what ingot wrote.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "io/npy.h"
#include "ir/dispatch.h"

using namespace ingot;

namespace {

std::string unhex(const char* h) {
  std::string out;
  for (size_t i = 0; h[i] && h[i + 1]; i += 2) {
    auto v = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out += char(v(h[i]) * 16 + v(h[i + 1]));
  }
  return out;
}

// np.save(np.array([[1, -2, 3], [4, 5, -6]], dtype='>i4'))
const std::string kBigEndianI4 = unhex(
    "934e554d5059010076007b276465736372273a20273e6934272c2027666f727472616e5f6f72646572273a2046616c73652c"
    "20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020200a00000001fffffffe000000030000000400000005ffff"
    "fffa");
// write_array(np.array([1.5, -2.25, 3.0], dtype='<f8'), version=(2, 0))
const std::string kV2F8 = unhex(
    "934e554d50590200740000007b276465736372273a20273c6638272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028332c292c207d20202020202020202020202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020200a000000000000f83f00000000000002c0000000000000"
    "0840");
// write_array(np.array([7, 65535], dtype='<u2'), version=(3, 0))
const std::string kV3U2 = unhex(
    "934e554d50590300740000007b276465736372273a20273c7532272c2027666f727472616e5f6f72646572273a2046616c73"
    "652c20277368617065273a2028322c292c207d20202020202020202020202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020200a0700ffff");
// np.save(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
const std::string kFortran = unhex(
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a20547275652c20"
    "277368617065273a2028322c2033292c207d2020202020202020202020202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020200a00000000000040400000803f00008040000000400000"
    "a040");
// np.save(np.array([1 + 2j], dtype='<c8'))
const std::string kComplex = unhex(
    "934e554d5059010076007b276465736372273a20273c6338272c2027666f727472616e5f6f72646572273a2046616c73652c"
    "20277368617065273a2028312c292c207d202020202020202020202020202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020200a0000803f00000040");
// np.savez(ids=np.array([[1, 2, 3]], dtype=np.int64), mask=np.array([True, False])): stored
// members with zip64 extra fields in the local headers (NumPy forces zip64).
const std::string kSavez = unhex(
    "504b03041400000000000000210095ee46dc9800000098000000070014006964732e6e707901001000980000000000000098"
    "00000000000000934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a"
    "2046616c73652c20277368617065273a2028312c2033292c207d202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020202020200a010000000000000002000000000000"
    "000300000000000000504b030414000000000000002100ee19bb5d8200000082000000080014006d61736b2e6e7079010010"
    "0082000000000000008200000000000000934e554d5059010076007b276465736372273a20277c6231272c2027666f727472"
    "616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d20202020202020202020202020202020"
    "20202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0100504b01"
    "0214031400000000000000210095ee46dc98000000980000000700000000000000000000008001000000006964732e6e7079"
    "504b0102140314000000000000002100ee19bb5d82000000820000000800000000000000000000008001d10000006d61736b"
    "2e6e7079504b050600000000020002006b0000008d0100000000");
// np.savez_compressed(x=np.arange(12, dtype=np.float32).reshape(3, 4),
//                     h=np.array([0.5, -1], dtype=np.float16)): deflated members.
const std::string kSavezCompressed = unhex(
    "504b0304140000000800000021002d6f222666000000b000000005001400782e6e707901001000b000000000000000660000"
    "00000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e9366a2aea3a09e965f54529498179f5f94920a12774bcc"
    "294e058a17672416a402f91ac63a0a269a3a0ab50a64032e063068b007120e4004c40d40bc00880f00f10320667064601000"
    "62052036700400504b0304140000000800000021001680bc51480000008400000005001400682e6e70790100100084000000"
    "0000000048000000000000009bec17ea1b10c9c850c650ad9e925a9c5ca46ea5a06e9366a4aea3a09e965f54529498179f5f"
    "94920a12774bcc294e058a17672416a402f91a463a9a3a0ab50a14002e060b863d00504b0102140314000000080000002100"
    "2d6f222666000000b0000000050000000000000000000000800100000000782e6e7079504b01021403140000000800000021"
    "001680bc51480000008400000005000000000000000000000080019d000000682e6e7079504b050600000000020002006600"
    "00001c0100000000");

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// A tensor of `dtype` with distinct, exactly representable values.
Tensor sample(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = (i % 3) == 0;
    return t;
  }
  dispatch_numeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = dtype_is_signed(dtype) || dtype_is_float(dtype) ? double(i) - 3.0 : double(i);
      if (dtype_is_float(dtype)) v *= 0.5;
      t.data<T>()[i] = T(v);
    }
  });
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.scalar_as_double(i), b.scalar_as_double(i)) << "element " << i;
}

const DType kAllDtypes[] = {DType::kFloat16, DType::kFloat32, DType::kFloat64, DType::kInt8,   DType::kInt16,
                            DType::kInt32,   DType::kInt64,   DType::kUInt8,   DType::kUInt16, DType::kUInt32,
                            DType::kUInt64,  DType::kBool};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ingot_npy_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST(Npy, RoundTripsEveryDtype) {
  for (DType dt : kAllDtypes) {
    for (const Shape& shape : {Shape{2, 3}, Shape{5}, Shape{}, Shape{0, 4}, Shape{1, 2, 1, 3}}) {
      SCOPED_TRACE(dtype_name(dt) + " [" + shape_str(shape) + "]");
      Tensor t = sample(dt, shape);
      auto bytes = serialize_npy(t);
      ASSERT_TRUE(bytes.has_value()) << bytes.status().message();
      EXPECT_EQ((bytes->size() - t.nbytes()) % 64, 0u) << "data must start on a 64-byte boundary";
      auto back = parse_npy(*bytes, "mem");
      ASSERT_TRUE(back.has_value()) << back.status().message();
      expect_same(t, *back);
    }
  }
}

TEST(Npy, RoundTripsThroughFiles) {
  std::string npy = temp_path("a.npy"), npz = temp_path("a.npz"), npzc = temp_path("c.npz");
  Tensor t = sample(DType::kFloat32, {3, 4});
  ASSERT_TRUE(write_npy(npy, t).is_ok());
  auto back = read_npy(npy);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  expect_same(t, *back);

  std::vector<std::pair<std::string, Tensor>> members;
  for (DType dt : kAllDtypes) members.push_back({"t_" + dtype_name(dt), sample(dt, {2, 3})});
  for (bool compress : {false, true}) {
    const std::string& path = compress ? npzc : npz;
    ASSERT_TRUE(write_npz(path, members, compress).is_ok());
    auto z = read_npz(path);
    ASSERT_TRUE(z.has_value()) << z.status().message();
    ASSERT_EQ(z->size(), members.size());
    for (const auto& [k, v] : members) {
      ASSERT_TRUE(z->count(k)) << k;
      expect_same(v, z->at(k));
    }
  }
  std::remove(npy.c_str());
  std::remove(npz.c_str());
  std::remove(npzc.c_str());
}

TEST(Npy, WritesBfloat16AsFloat32) {
  Tensor t(DType::kBFloat16, {3});
  for (int i = 0; i < 3; ++i) t.data<bfloat16>()[i] = bfloat16(float(i) - 1.5f);
  auto bytes = serialize_npy(t);
  ASSERT_TRUE(bytes.has_value());
  auto back = parse_npy(*bytes, "mem");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->dtype(), DType::kFloat32);
  EXPECT_EQ(back->data<float>()[0], -1.5f);
  EXPECT_EQ(back->data<float>()[2], 0.5f);
}

TEST(Npy, ReadsNumpyFiles) {
  auto be = parse_npy(kBigEndianI4, "be.npy");
  ASSERT_TRUE(be.has_value()) << be.status().message();
  EXPECT_EQ(be->dtype(), DType::kInt32);
  EXPECT_EQ(be->shape(), (Shape{2, 3}));
  EXPECT_EQ(be->to_int_vector(), (std::vector<int64_t>{1, -2, 3, 4, 5, -6}));

  auto v2 = parse_npy(kV2F8, "v2.npy");
  ASSERT_TRUE(v2.has_value()) << v2.status().message();
  EXPECT_EQ(v2->dtype(), DType::kFloat64);
  EXPECT_EQ(v2->data<double>()[1], -2.25);

  auto v3 = parse_npy(kV3U2, "v3.npy");
  ASSERT_TRUE(v3.has_value()) << v3.status().message();
  EXPECT_EQ(v3->dtype(), DType::kUInt16);
  EXPECT_EQ(v3->data<uint16_t>()[1], 65535);
}

TEST(Npy, ReadsNumpyArchives) {
  auto z = parse_npz(kSavez, "savez.npz");
  ASSERT_TRUE(z.has_value()) << z.status().message();
  ASSERT_EQ(z->size(), 2u);
  EXPECT_EQ(z->at("ids").shape(), (Shape{1, 3}));
  EXPECT_EQ(z->at("ids").to_int_vector(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(z->at("mask").dtype(), DType::kBool);
  EXPECT_EQ(z->at("mask").to_int_vector(), (std::vector<int64_t>{1, 0}));

  auto c = parse_npz(kSavezCompressed, "c.npz");
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_EQ(c->at("x").shape(), (Shape{3, 4}));
  EXPECT_EQ(c->at("x").data<float>()[11], 11.0f);
  EXPECT_EQ(c->at("h").dtype(), DType::kFloat16);
  EXPECT_EQ(float(c->at("h").data<float16>()[1]), -1.0f);
}

TEST(Npy, RejectsUnsupportedLayouts) {
  auto f = parse_npy(kFortran, "f.npy");
  ASSERT_FALSE(f.has_value());
  EXPECT_TRUE(contains(f.status().message(), "f.npy")) << f.status().message();
  EXPECT_TRUE(contains(f.status().message(), "Fortran")) << f.status().message();
  EXPECT_EQ(f.status().code(), ErrorCode::kUnsupported);

  auto c = parse_npy(kComplex, "c.npy");
  ASSERT_FALSE(c.has_value());
  EXPECT_TRUE(contains(c.status().message(), "c.npy: unsupported dtype '<c8'")) << c.status().message();
}

TEST(Npy, MalformedFilesGiveErrorsNamingTheFile) {
  struct Case {
    std::string bytes, expect;
  };
  std::string good = *serialize_npy(sample(DType::kFloat32, {4, 4}));
  std::string bad_header = good;
  bad_header.replace(10, 8, "{'desc!!");
  std::string unknown_version = good;
  unknown_version[6] = 9;
  std::string text_dtype = good;
  text_dtype.replace(text_dtype.find("<f4"), 3, "<U4");
  const Case cases[] = {
      {"", "truncated"},
      {"hello world, not numpy", "bad magic"},
      {good.substr(0, 8), "truncated"},
      {good.substr(0, 40), "truncated"},
      {good.substr(0, good.size() - 1), "truncated"},
      {bad_header, "bad .npy header"},
      {unknown_version, "version 9.0"},
      {text_dtype, "unsupported dtype '<U4'"},
  };
  for (const auto& c : cases) {
    auto r = parse_npy(c.bytes, "broken.npy");
    ASSERT_FALSE(r.has_value()) << c.expect;
    EXPECT_TRUE(contains(r.status().message(), "broken.npy")) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), c.expect)) << r.status().message();
  }
  auto missing = read_npy("/nonexistent/dir/x.npy");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(contains(missing.status().message(), "/nonexistent/dir/x.npy"));

  auto half = parse_npz(kSavezCompressed.substr(0, kSavezCompressed.size() / 2), "half.npz");
  ASSERT_FALSE(half.has_value());
  EXPECT_TRUE(contains(half.status().message(), "half.npz")) << half.status().message();
  EXPECT_TRUE(contains(half.status().message(), "truncated")) << half.status().message();

  std::string crc = kSavez;
  crc[crc.find("\x93NUMPY") + 130] ^= 1;  // a data byte of the first member
  auto bad_crc = parse_npz(crc, "crc.npz");
  ASSERT_FALSE(bad_crc.has_value());
  EXPECT_TRUE(contains(bad_crc.status().message(), "crc.npz: member 'ids.npy'")) << bad_crc.status().message();

  auto not_zip = parse_npz("just some text that is no archive", "t.npz");
  ASSERT_FALSE(not_zip.has_value());
  EXPECT_TRUE(contains(not_zip.status().message(), "t.npz: not a zip archive")) << not_zip.status().message();
}

// Every prefix and every single-byte corruption of valid files: an error or a value, never a
// crash (run under ASan/UBSan to make this test bite harder).
TEST(Npy, NeverCrashesOnCorruptInput) {
  std::string npy = *serialize_npy(sample(DType::kInt16, {3, 5}));
  for (const std::string* src : std::vector<const std::string*>{&npy, &kSavez, &kSavezCompressed, &kV2F8}) {
    bool zip = src == &kSavez || src == &kSavezCompressed;
    for (size_t n = 0; n < src->size(); ++n) {
      std::string cut = src->substr(0, n);
      if (zip) (void)parse_npz(cut, "cut.npz");
      else EXPECT_FALSE(parse_npy(cut, "cut.npy").has_value()) << n;
    }
    for (size_t i = 0; i < src->size(); ++i) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        std::string bad = *src;
        bad[i] = char(bad[i] ^ flip);
        if (zip) (void)parse_npz(bad, "bad.npz");
        else (void)parse_npy(bad, "bad.npy");
      }
    }
  }
}

// What ingot writes, NumPy reads (skipped where Debian's python3-numpy is not installed).
TEST(Npy, NumpyReadsWhatIngotWrites) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no /usr/bin/python3 with numpy";
  std::string npz = temp_path("np.npz"), npzc = temp_path("npc.npz"), npy = temp_path("np.npy");
  std::vector<std::pair<std::string, Tensor>> members;
  for (DType dt : kAllDtypes) members.push_back({dtype_name(dt), sample(dt, {2, 3})});
  ASSERT_TRUE(write_npz(npz, members, false).is_ok());
  ASSERT_TRUE(write_npz(npzc, members, true).is_ok());
  ASSERT_TRUE(write_npy(npy, sample(DType::kFloat16, {7})).is_ok());
  std::string script =
      "import numpy as np, sys\n"
      "for p in sys.argv[1:3]:\n"
      "    z = np.load(p)\n"
      "    assert len(z.files) == 12, z.files\n"
      "    for k in z.files:\n"
      "        a = z[k]\n"
      "        assert a.shape == (2, 3) and str(a.dtype) == k, (k, a.dtype, a.shape)\n"
      "        exp = np.arange(6).reshape(2, 3)\n"
      "        if k == 'bool': exp = exp % 3 == 0\n"
      "        elif k.startswith('float'): exp = (exp - 3) * 0.5\n"
      "        elif k.startswith('int'): exp = exp - 3\n"
      "        assert (a == exp).all(), (k, a)\n"
      "h = np.load(sys.argv[3])\n"
      "assert h.dtype == np.float16 and h[0] == -1.5, h\n";
  std::string script_path = temp_path("check.py");
  std::ofstream(script_path) << script;
  int rc = std::system(("/usr/bin/python3 " + script_path + " " + npz + " " + npzc + " " + npy).c_str());
  EXPECT_EQ(rc, 0);
  for (const auto& p : {npz, npzc, npy, script_path}) std::remove(p.c_str());
}
