#include "io/npy.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace ingot {
namespace {

namespace fs = std::filesystem;
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

// ---------------------------------------------------------------- files

Expected<std::string> read_whole_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return not_found(path + ": no such file");
  if (fs::is_directory(path, ec)) return invalid_argument(path + ": is a directory, expected " + what);
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return io_error(path + ": read failed");
  return ss.str();
}

Status write_whole_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return io_error(path + ": cannot open for writing");
  f.write(bytes.data(), std::streamsize(bytes.size()));
  f.close();
  if (!f) return io_error(path + ": write failed");
  return Status::ok();
}

// ---------------------------------------------------------------- npy header

// A value of the header dict: a string, a bool, or a tuple of integers.
struct PyValue {
  enum class Kind { kString, kBool, kTuple, kOther } kind = Kind::kOther;
  std::string s;
  bool b = false;
  std::vector<int64_t> ints;
};

// Parses the Python dict literal of a .npy header. Accepts what NumPy (any version) writes.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : t_(text) {}

  Status parse(std::map<std::string, PyValue>& out) {
    ws();
    if (!eat('{')) return err("expected '{'");
    for (;;) {
      ws();
      if (eat('}')) break;
      std::string key;
      if (!string_lit(key)) return err("expected a quoted key");
      ws();
      if (!eat(':')) return err("expected ':' after key '" + key + "'");
      ws();
      PyValue v;
      INGOT_RETURN_IF_ERROR(value(v));
      out[key] = std::move(v);
      ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return err("expected ',' or '}'");
    }
    ws();
    if (i_ != t_.size()) return err("unexpected text after '}'");
    return Status::ok();
  }

 private:
  Status err(const std::string& what) const {
    return invalid_argument(what + " at offset " + std::to_string(i_));
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (i_ < t_.size() && t_[i_] == c) { ++i_; return true; }
    return false;
  }
  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (t_.compare(i_, n, w) == 0) { i_ += n; return true; }
    return false;
  }
  bool string_lit(std::string& out) {
    if (i_ >= t_.size() || (t_[i_] != '\'' && t_[i_] != '"')) return false;
    char q = t_[i_++];
    while (i_ < t_.size() && t_[i_] != q) {
      if (t_[i_] == '\\' && i_ + 1 < t_.size()) ++i_;
      out += t_[i_++];
    }
    return eat(q);
  }
  bool integer(int64_t& v) {
    size_t start = i_;
    bool neg = eat('-');
    if (i_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[i_]))) { i_ = start; return false; }
    int64_t x = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_]))) {
      if (x > (INT64_MAX - 9) / 10) return false;
      x = x * 10 + (t_[i_++] - '0');
    }
    eat('L');  // Python 2 longs: (2L, 3L)
    v = neg ? -x : x;
    return true;
  }
  Status value(PyValue& v) {
    if (i_ < t_.size() && (t_[i_] == '\'' || t_[i_] == '"')) {
      v.kind = PyValue::Kind::kString;
      if (!string_lit(v.s)) return err("unterminated string");
      return Status::ok();
    }
    if (word("True")) { v.kind = PyValue::Kind::kBool; v.b = true; return Status::ok(); }
    if (word("False")) { v.kind = PyValue::Kind::kBool; v.b = false; return Status::ok(); }
    if (eat('(')) {
      v.kind = PyValue::Kind::kTuple;
      for (;;) {
        ws();
        if (eat(')')) return Status::ok();
        int64_t x;
        if (!integer(x)) return err("expected an integer in the shape tuple");
        v.ints.push_back(x);
        ws();
        if (eat(',')) continue;
        if (eat(')')) return Status::ok();
        return err("expected ',' or ')' in the shape tuple");
      }
    }
    // Anything else (a list for structured dtypes, a dict): skip it with bracket matching so
    // the caller can say which key was unusable.
    v.kind = PyValue::Kind::kOther;
    int depth = 0;
    while (i_ < t_.size()) {
      char c = t_[i_];
      if (c == '\'' || c == '"') { std::string s; if (!string_lit(s)) return err("unterminated string"); continue; }
      if (c == '[' || c == '(' || c == '{') ++depth;
      if (c == ']' || c == ')' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++i_;
    }
    return Status::ok();
  }

  const std::string& t_;
  size_t i_ = 0;
};

struct NpyDtype {
  DType dtype = DType::kUndefined;
  bool big_endian = false;
};

Expected<NpyDtype> parse_descr(const std::string& d) {
  std::string s = d;
  NpyDtype out;
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    out.big_endian = s[0] == '>';
    s = s.substr(1);
  }
  static const std::map<std::string, DType> kTypes = {
      {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
      {"i1", DType::kInt8},    {"i2", DType::kInt16},   {"i4", DType::kInt32}, {"i8", DType::kInt64},
      {"u1", DType::kUInt8},   {"u2", DType::kUInt16},  {"u4", DType::kUInt32}, {"u8", DType::kUInt64},
      {"b1", DType::kBool},    {"?", DType::kBool},
  };
  auto it = kTypes.find(s);
  if (it == kTypes.end()) {
    std::string hint;
    if (!s.empty()) {
      switch (s[0]) {
        case 'c': hint = " (complex)"; break;
        case 'U': case 'S': case 'a': hint = " (strings)"; break;
        case 'O': hint = " (Python objects)"; break;
        case 'M': case 'm': hint = " (dates/times)"; break;
        case 'V': hint = " (raw/structured)"; break;
        case 'f': hint = " (float of this size)"; break;
        default: break;
      }
    }
    return unsupported("unsupported dtype '" + d + "'" + hint +
                       "; ingot reads float16/32/64, int8..int64, uint8..uint64 and bool");
  }
  out.dtype = it->second;
  return out;
}

uint32_t rd16(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t rd32(const unsigned char* p) { return rd16(p) | uint32_t(rd16(p + 2)) << 16; }
uint64_t rd64(const unsigned char* p) { return uint64_t(rd32(p)) | uint64_t(rd32(p + 4)) << 32; }
void wr16(std::string& s, uint32_t v) { s += char(v & 0xff); s += char((v >> 8) & 0xff); }
void wr32(std::string& s, uint32_t v) { wr16(s, v & 0xffff); wr16(s, v >> 16); }

const char kMagic[] = "\x93NUMPY";

std::string descr_for(DType t) {
  switch (t) {
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kUInt8: return "|u1";
    case DType::kUInt16: return "<u2";
    case DType::kUInt32: return "<u4";
    case DType::kUInt64: return "<u8";
    case DType::kBool: return "|b1";
    default: return "";
  }
}

// ---------------------------------------------------------------- zip

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;

Expected<std::string> inflate_raw(const unsigned char* data, uint64_t size, uint64_t out_size) {
  std::string out;
  out.resize(size_t(out_size));
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return internal_error("zlib inflateInit2 failed");
  uint64_t in_left = size, out_left = out_size;
  zs.next_in = const_cast<Bytef*>(data);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_left) {
      zs.avail_in = uInt(std::min<uint64_t>(in_left, UINT_MAX));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0 && out_left) {
      zs.avail_out = uInt(std::min<uint64_t>(out_left, UINT_MAX));
      out_left -= zs.avail_out;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR) break;  // out of input or output before the stream ended
  }
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return invalid_argument(rc == Z_DATA_ERROR ? "corrupt deflate data" : "deflate data is truncated or longer than declared");
  }
  if (produced != out_size) return invalid_argument("deflate data decompresses to " + std::to_string(produced) +
                                                    " bytes, the zip directory says " + std::to_string(out_size));
  return out;
}

Expected<std::string> deflate_raw(const std::string& in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return internal_error("zlib deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, uLong(in.size())) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = uInt(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t n = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return internal_error("zlib deflate failed");
  out.resize(n);
  return out;
}

struct ZipEntry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
};

Expected<std::vector<ZipEntry>> read_central_directory(const std::string& bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t n = bytes.size();
  if (n < 22) return invalid_argument("not a zip archive (too short: " + std::to_string(n) + " bytes)");
  // The end-of-central-directory record: last 22 bytes plus up to 64 KiB of comment.
  int64_t eocd = -1;
  for (int64_t p = int64_t(n) - 22; p >= 0 && p >= int64_t(n) - 22 - 65535; --p) {
    if (rd32(b + p) == kEocdSig) { eocd = p; break; }
  }
  if (eocd < 0) {
    if (n >= 4 && rd32(b) == kLocalSig) return invalid_argument("truncated zip archive (no end-of-directory record)");
    return invalid_argument("not a zip archive (no end-of-directory record)");
  }
  uint64_t count = rd16(b + eocd + 10), cd_size = rd32(b + eocd + 12), cd_off = rd32(b + eocd + 16);
  if (count == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu) {
    // Zip64: the locator sits right before the end record.
    if (eocd < 20 || rd32(b + eocd - 20) != kZip64LocatorSig) return invalid_argument("zip64 locator missing");
    uint64_t z = rd64(b + eocd - 20 + 8);
    if (z + 56 > n || rd32(b + z) != kZip64EocdSig) return invalid_argument("zip64 end record missing or truncated");
    count = rd64(b + z + 32);
    cd_size = rd64(b + z + 40);
    cd_off = rd64(b + z + 48);
  }
  if (cd_off > n || cd_size > n - cd_off) return invalid_argument("truncated zip archive (central directory out of range)");
  std::vector<ZipEntry> out;
  uint64_t p = cd_off, end = cd_off + cd_size;
  for (uint64_t i = 0; i < count; ++i) {
    if (p + 46 > end || rd32(b + p) != kCentralSig) return invalid_argument("corrupt zip central directory");
    ZipEntry e;
    e.flags = uint16_t(rd16(b + p + 8));
    e.method = uint16_t(rd16(b + p + 10));
    e.crc = rd32(b + p + 16);
    e.csize = rd32(b + p + 20);
    e.usize = rd32(b + p + 24);
    uint32_t name_len = rd16(b + p + 28), extra_len = rd16(b + p + 30), comment_len = rd16(b + p + 32);
    e.offset = rd32(b + p + 42);
    if (p + 46 + name_len + extra_len + comment_len > end) return invalid_argument("corrupt zip central directory");
    e.name.assign(bytes, size_t(p + 46), name_len);
    // Zip64 extra field: the 64-bit values of the fields that hold 0xffffffff, in order.
    const unsigned char* x = b + p + 46 + name_len;
    for (uint32_t q = 0; q + 4 <= extra_len;) {
      uint32_t id = rd16(x + q), len = rd16(x + q + 2);
      if (q + 4 + len > extra_len) break;
      if (id == 0x0001) {
        uint32_t r = q + 4;
        if (e.usize == 0xffffffffu && r + 8 <= q + 4 + len) { e.usize = rd64(x + r); r += 8; }
        if (e.csize == 0xffffffffu && r + 8 <= q + 4 + len) { e.csize = rd64(x + r); r += 8; }
        if (e.offset == 0xffffffffu && r + 8 <= q + 4 + len) { e.offset = rd64(x + r); r += 8; }
      }
      q += 4 + len;
    }
    out.push_back(std::move(e));
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

Expected<std::string> read_zip_member(const std::string& bytes, const ZipEntry& e) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t n = bytes.size();
  if (e.flags & 1) return unsupported("member is encrypted");
  if (e.offset > n || n - e.offset < 30 || rd32(b + e.offset) != kLocalSig) {
    return invalid_argument("corrupt or truncated zip archive (bad local header)");
  }
  uint64_t data = e.offset + 30 + rd16(b + e.offset + 26) + rd16(b + e.offset + 28);
  if (data > n || e.csize > n - data) return invalid_argument("truncated zip archive (member data cut off)");
  std::string out;
  if (e.method == 0) {
    if (e.csize != e.usize) return invalid_argument("stored member with different compressed and plain sizes");
    out.assign(bytes, size_t(data), size_t(e.usize));
  } else if (e.method == 8) {
    // Deflate expands at most ~1032:1; a larger claim is a corrupt directory, not a reason to
    // allocate gigabytes.
    if (e.usize / 1032 > e.csize + 1) return invalid_argument("corrupt zip directory (implausible member size)");
    auto r = inflate_raw(b + data, e.csize, e.usize);
    if (!r) return r.status();
    out = std::move(*r);
  } else {
    return unsupported("compression method " + std::to_string(e.method) +
                       " (ingot reads stored and deflate members, as np.savez and np.savez_compressed write)");
  }
  uint32_t crc = 0;
  for (size_t off = 0; off < out.size();) {
    uInt chunk = uInt(std::min<size_t>(out.size() - off, UINT_MAX));
    crc = uint32_t(crc32(crc, reinterpret_cast<const Bytef*>(out.data() + off), chunk));
    off += chunk;
  }
  if (crc != e.crc) return invalid_argument("CRC mismatch (the archive is corrupt)");
  return out;
}

}  // namespace

// ---------------------------------------------------------------- npy

Expected<Tensor> parse_npy(const std::string& bytes, const std::string& name) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  if (n < 10) {
    if (n >= 6 && std::memcmp(b, kMagic, 6) != 0) return invalid_argument(name + ": not a .npy file (bad magic)");
    return invalid_argument(name + ": truncated .npy file (" + std::to_string(n) + " bytes, shorter than the header)");
  }
  if (std::memcmp(b, kMagic, 6) != 0) return invalid_argument(name + ": not a .npy file (bad magic; expected \\x93NUMPY)");
  int major = b[6], minor = b[7];
  size_t prefix, hlen;
  if (major == 1) {
    prefix = 10;
    hlen = rd16(b + 8);
  } else if (major == 2 || major == 3) {
    if (n < 12) return invalid_argument(name + ": truncated .npy file (header length cut off)");
    prefix = 12;
    hlen = rd32(b + 8);
  } else {
    return unsupported(name + ": .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " is not supported (expected 1.0, 2.0 or 3.0)");
  }
  if (hlen > n - prefix) {
    return invalid_argument(name + ": truncated .npy file (header of " + std::to_string(hlen) + " bytes, file has " +
                            std::to_string(n - prefix) + " after the prefix)");
  }
  std::string header = bytes.substr(prefix, hlen);
  std::map<std::string, PyValue> dict;
  Status st = HeaderParser(header).parse(dict);
  if (!st) return invalid_argument(name + ": bad .npy header: " + st.message());
  auto descr = dict.find("descr");
  auto order = dict.find("fortran_order");
  auto shape_it = dict.find("shape");
  if (descr == dict.end() || order == dict.end() || shape_it == dict.end()) {
    return invalid_argument(name + ": bad .npy header: expected keys 'descr', 'fortran_order' and 'shape'");
  }
  if (descr->second.kind != PyValue::Kind::kString) {
    return unsupported(name + ": unsupported dtype: structured arrays (a list 'descr') are not supported");
  }
  if (order->second.kind != PyValue::Kind::kBool) return invalid_argument(name + ": bad .npy header: 'fortran_order' is not True/False");
  if (shape_it->second.kind != PyValue::Kind::kTuple) return invalid_argument(name + ": bad .npy header: 'shape' is not a tuple");
  auto dt = parse_descr(descr->second.s);
  if (!dt) return dt.status().with_context(name + ": ");
  if (order->second.b) {
    return unsupported(name + ": Fortran-order arrays are not supported; save a C-order array "
                              "(np.ascontiguousarray) instead");
  }
  Shape shape = shape_it->second.ints;
  const size_t esize = dtype_size(dt->dtype);
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument(name + ": bad .npy header: negative dimension " + std::to_string(d));
    if (d != 0 && numel > (uint64_t(1) << 62) / uint64_t(d)) return invalid_argument(name + ": bad .npy header: shape too large");
    numel *= uint64_t(d);
  }
  uint64_t need = numel * esize;
  size_t have = n - prefix - hlen;
  if (need > have) {
    return invalid_argument(name + ": truncated .npy file (" + dtype_name(dt->dtype) + " [" + shape_str(shape) + "] needs " +
                            std::to_string(need) + " data bytes, file has " + std::to_string(have) + ")");
  }
  Tensor t(dt->dtype, shape);
  if (need) std::memcpy(t.raw(), b + prefix + hlen, size_t(need));
  auto* d = static_cast<unsigned char*>(t.raw());
  if (dt->big_endian && esize > 1) {
    for (uint64_t i = 0; i < numel; ++i) std::reverse(d + i * esize, d + (i + 1) * esize);
  }
  if (dt->dtype == DType::kBool) {
    for (uint64_t i = 0; i < numel; ++i) d[i] = d[i] ? 1 : 0;
  }
  return t;
}

Expected<std::string> serialize_npy(const Tensor& in) {
  Tensor t = in;
  if (t.dtype() == DType::kBFloat16) {  // no NumPy dtype: widen to float32
    Tensor f(DType::kFloat32, t.shape());
    const auto* src = t.data<bfloat16>();
    float* dst = f.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = float(src[i]);
    t = f;
  }
  std::string descr = descr_for(t.dtype());
  if (descr.empty()) return unsupported("cannot write a " + dtype_name(t.dtype()) + " tensor as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    shape += (t.shape().size() == 1) ? "," : (i + 1 < t.shape().size() ? ", " : "");
  }
  shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  size_t prefix = dict.size() + 1 + 10 > 65535 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += char(prefix == 10 ? 1 : 2);
  out += char(0);
  if (prefix == 10) wr16(out, uint32_t(dict.size())); else wr32(out, uint32_t(dict.size()));
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Expected<Tensor> read_npy(const std::string& path) {
  auto bytes = read_whole_file(path, "a .npy file");
  if (!bytes) return bytes.status();
  return parse_npy(*bytes, path);
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = serialize_npy(t);
  if (!bytes) return bytes.status().with_context(path + ": ");
  return write_whole_file(path, *bytes);
}

// ---------------------------------------------------------------- npz

Expected<std::map<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& name) {
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), kMagic, 6) == 0) {
    return invalid_argument(name + ": is a .npy file, expected an .npz archive (use --input NAME=" + name + ")");
  }
  auto entries = read_central_directory(bytes);
  if (!entries) return entries.status().with_context(name + ": ");
  std::map<std::string, Tensor> out;
  for (const auto& e : *entries) {
    if (!e.name.empty() && e.name.back() == '/') continue;  // a directory entry
    std::string member = name + ": member '" + e.name + "'";
    auto data = read_zip_member(bytes, e);
    if (!data) return data.status().with_context(member + ": ");
    auto t = parse_npy(*data, member);
    if (!t) return t.status();
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = std::move(*t);
  }
  return out;
}

Expected<std::string> serialize_npz(const std::vector<std::pair<std::string, Tensor>>& tensors, bool compress) {
  std::string out, central;
  const uint32_t kDosTime = 0, kDosDate = (0u << 9) | (1u << 5) | 1u;  // 1980-01-01 00:00
  for (const auto& [key, t] : tensors) {
    std::string fname = key + ".npy";
    if (fname.size() > 0xffff) return invalid_argument("tensor name too long for a zip member: '" + key.substr(0, 40) + "...'");
    auto npy = serialize_npy(t);
    if (!npy) return npy.status().with_context("'" + key + "': ");
    uint32_t crc = 0;
    for (size_t off = 0; off < npy->size();) {
      uInt chunk = uInt(std::min<size_t>(npy->size() - off, UINT_MAX));
      crc = uint32_t(crc32(crc, reinterpret_cast<const Bytef*>(npy->data() + off), chunk));
      off += chunk;
    }
    std::string payload;
    if (compress) {
      auto d = deflate_raw(*npy);
      if (!d) return d.status();
      payload = std::move(*d);
    }
    const std::string& data = compress ? payload : *npy;
    if (npy->size() >= 0xffffffffu || data.size() >= 0xffffffffu || out.size() >= 0xffffffffu) {
      return unsupported("'" + key + "': .npz members over 4 GiB are not supported (no zip64 writing)");
    }
    uint32_t offset = uint32_t(out.size());
    uint16_t method = compress ? 8 : 0;
    auto common = [&](std::string& s) {
      wr16(s, 20);  // version needed: 2.0
      wr16(s, 0);   // flags
      wr16(s, method);
      wr16(s, kDosTime);
      wr16(s, kDosDate);
      wr32(s, crc);
      wr32(s, uint32_t(data.size()));
      wr32(s, uint32_t(npy->size()));
      wr16(s, uint32_t(fname.size()));
      wr16(s, 0);  // extra length
    };
    wr32(out, kLocalSig);
    common(out);
    out += fname;
    out += data;
    wr32(central, kCentralSig);
    wr16(central, (3u << 8) | 20u);  // made by: Unix, 2.0
    common(central);
    wr16(central, 0);               // comment length
    wr16(central, 0);               // disk
    wr16(central, 0);               // internal attributes
    wr32(central, 0100644u << 16);  // external attributes: regular file, rw-r--r--
    wr32(central, offset);
    central += fname;
  }
  if (tensors.size() >= 0xffff || out.size() >= 0xffffffffu) {
    return unsupported(".npz archives with this many members or over 4 GiB are not supported (no zip64 writing)");
  }
  uint32_t cd_off = uint32_t(out.size());
  out += central;
  wr32(out, kEocdSig);
  wr16(out, 0);
  wr16(out, 0);
  wr16(out, uint32_t(tensors.size()));
  wr16(out, uint32_t(tensors.size()));
  wr32(out, uint32_t(central.size()));
  wr32(out, cd_off);
  wr16(out, 0);
  return out;
}

Expected<std::map<std::string, Tensor>> read_npz(const std::string& path) {
  auto bytes = read_whole_file(path, "an .npz file");
  if (!bytes) return bytes.status();
  return parse_npz(*bytes, path);
}

Status write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors, bool compress) {
  auto bytes = serialize_npz(tensors, compress);
  if (!bytes) return bytes.status().with_context(path + ": ");
  return write_whole_file(path, *bytes);
}

}  // namespace ingot
