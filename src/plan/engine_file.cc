#include "plan/engine_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "io/json_text.h"
#include "io/mapped_file.h"
#include "onnx_import/export.h"
#include "onnx_import/import.h"
#include "onnx_import/tensor_proto.h"

namespace ingot {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull, kPrime2 = 0xC2B2AE3D27D4EB4Full;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t mix(uint64_t acc, uint64_t v) { return rotl(acc + v * kPrime2, 31) * kPrime1; }

void put_u32(std::string& s, size_t at, uint32_t v) { std::memcpy(&s[at], &v, 4); }
void put_u64(std::string& s, size_t at, uint64_t v) { std::memcpy(&s[at], &v, 8); }
uint64_t get_u64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// A read-only mapping of a whole file, unmapped when the last tensor viewing it goes.
struct Mapping {
  void* base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base == MAP_FAILED) return;
    unregister_file_mapping(base);
    munmap(base, size);
  }
};

}  // namespace

// Hashes `head` (a multiple of 32 bytes) followed by `tail`, as if they were one buffer.
// drop_read_pages: `tail` is a registered file mapping whose pages are handed back as they are
// hashed (io/mapped_file.h), so that checking a large engine does not make all of it resident.
static uint64_t hash64_parts(const void* head, size_t head_size, const void* tail, size_t tail_size, uint64_t seed,
                             bool drop_read_pages = false) {
  uint64_t a = seed + kPrime1, b = seed + kPrime2, c = seed, d = seed - kPrime1;
  auto blocks = [&](const unsigned char* p, size_t n) {
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      uint64_t w[4];
      std::memcpy(w, p + i, 32);
      a = mix(a, w[0]);
      b = mix(b, w[1]);
      c = mix(c, w[2]);
      d = mix(d, w[3]);
    }
    return i;
  };
  blocks(static_cast<const unsigned char*>(head), head_size);
  const auto* t = static_cast<const unsigned char*>(tail);
  constexpr size_t kChunk = size_t(32) << 20;  // a multiple of 32
  size_t i = 0;
  while (tail_size - i >= 32) {
    const size_t n = std::min(kChunk, (tail_size - i) / 32 * 32);
    blocks(t + i, n);
    if (drop_read_pages) drop_file_pages(t + i, n);
    i += n;
  }
  uint64_t h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + head_size + tail_size;
  for (; i < tail_size; ++i) h = mix(h, t[i]);
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  return h;
}

uint64_t hash64(const void* data, size_t size, uint64_t seed) { return hash64_parts(nullptr, 0, data, size, seed); }

bool is_engine_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  return f.read(magic, 8) && std::memcmp(magic, kEngineMagic, 8) == 0;
}

Status write_engine_file(const std::string& path, const Model& model, const nlohmann::json& manifest) {
  std::string weights;
  auto sink = [&](const Tensor& t) -> uint64_t {
    weights.resize(align64(weights.size()));
    uint64_t off = weights.size();
    weights.append(static_cast<const char*>(t.raw()), t.nbytes());
    return off;
  };
  auto graph = serialize_model(model, sink);
  if (!graph) return graph.status();
  std::string json = json_text(manifest);

  std::string file(kEngineHeaderSize, '\0');
  std::memcpy(&file[0], kEngineMagic, 8);
  put_u32(file, 8, kEngineFormatVersion);
  size_t manifest_off = file.size();
  file += json;
  size_t graph_off = file.size();
  file += *graph;
  size_t weights_off = align64(file.size());
  file.resize(weights_off);
  file += weights;
  put_u64(file, 16, manifest_off);
  put_u64(file, 24, json.size());
  put_u64(file, 32, graph_off);
  put_u64(file, 40, graph->size());
  put_u64(file, 48, weights_off);
  put_u64(file, 56, weights.size());
  put_u64(file, 64, hash64(file.data(), file.size()));

  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return io_error(path + ": cannot open for writing");
    f.write(file.data(), std::streamsize(file.size()));
    if (!f) return io_error(path + ": writing failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return io_error(path + ": cannot replace the file");
  return Status::ok();
}

Expected<LoadedEngineFile> read_engine_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return not_found(path + ": no such file");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + ": not a regular file");
  }
  auto map = std::make_shared<Mapping>();
  map->size = size_t(st.st_size);
  if (map->size >= kEngineHeaderSize) map->base = mmap(nullptr, map->size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map->size < kEngineHeaderSize) return invalid_model(path + ": truncated engine file (" + std::to_string(map->size) + " bytes, the header alone is 128)");
  if (map->base == MAP_FAILED) return io_error(path + ": cannot map the file");
  register_file_mapping(map->base, map->size);
  const auto* base = static_cast<const std::byte*>(map->base);
  if (std::memcmp(base, kEngineMagic, 8) != 0) return invalid_model(path + ": not an ingot engine file (bad magic)");
  uint32_t version;
  std::memcpy(&version, base + 8, 4);
  if (version != kEngineFormatVersion) {
    return invalid_model(path + ": engine format version " + std::to_string(version) + ", this ingot reads version " +
                         std::to_string(kEngineFormatVersion) + ": rebuild the engine with this ingot");
  }
  uint64_t mo = get_u64(base + 16), ms = get_u64(base + 24), go = get_u64(base + 32), gs = get_u64(base + 40),
           wo = get_u64(base + 48), ws = get_u64(base + 56), sum = get_u64(base + 64);
  auto within = [&](uint64_t off, uint64_t size) { return off <= map->size && size <= map->size - off; };
  if (!within(mo, ms) || !within(go, gs) || !within(wo, ws) || wo + ws != map->size) {
    return invalid_model(path + ": truncated or corrupt engine file (sections extend past its " +
                         std::to_string(map->size) + " bytes)");
  }
  // Checksum with its own field taken as zero.
  std::byte header[kEngineHeaderSize];
  std::memcpy(header, base, kEngineHeaderSize);
  std::memset(header + 64, 0, 8);
  static_assert(kEngineHeaderSize % 32 == 0, "the header is hashed as whole blocks");
  // Its pages are handed back as they are read: the weights are read again only by the backends
  // that use them in place, and packed or uploaded by the others (io/mapped_file.h).
  uint64_t h = hash64_parts(header, kEngineHeaderSize, base + kEngineHeaderSize, map->size - kEngineHeaderSize, 0,
                            true);
  if (h != sum) return invalid_model(path + ": engine file is corrupt (checksum mismatch)");

  LoadedEngineFile out;
  try {
    out.manifest = nlohmann::json::parse(reinterpret_cast<const char*>(base + mo), reinterpret_cast<const char*>(base + mo + ms));
  } catch (const std::exception& e) {
    return invalid_model(path + ": engine manifest is not valid JSON: " + e.what());
  }
  MappedWeights mw{base + wo, size_t(ws), map};
  std::string graph(reinterpret_cast<const char*>(base + go), gs);
  auto model = load_onnx_bytes(graph, path, &mw);
  if (!model) return model.status();
  out.model = std::move(*model);
  return out;
}

}  // namespace ingot
