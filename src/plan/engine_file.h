// The engine file (.ingot): an optimized model, its profiles and its weights, ready to map.
//
// Byte layout (all integers little-endian):
//
//   offset  size  field
//   0       8     magic "INGOTENG"
//   8       4     format version (uint32), kEngineFormatVersion
//   12      4     reserved, 0
//   16      8     manifest offset (uint64)   JSON: versions, device, ISA, precision, profiles, I/O
//   24      8     manifest size
//   32      8     graph offset               ONNX ModelProto of the optimized graph; initializers
//   40      8     graph size                 are external data at location "@ingot-weights"
//   48      8     weights offset             64-byte aligned; each tensor 64-byte aligned in it
//   56      8     weights size
//   64      8     checksum (uint64)          hash64 of the whole file with this field zeroed
//   72      56    reserved, 0                (header is 128 bytes)
//   128     ...   manifest, graph, padding, weights
//
// Readers check magic, version, sizes against the file size, and the checksum before anything
// else, so a truncated, corrupted or foreign file is refused with one clear error. Weights are
// memory-mapped read-only and used in place: loading does not copy or parse them.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ingot/status.h"
#include "ir/graph.h"

namespace ingot {

inline constexpr char kEngineMagic[8] = {'I', 'N', 'G', 'O', 'T', 'E', 'N', 'G'};
inline constexpr uint32_t kEngineFormatVersion = 1;
inline constexpr size_t kEngineHeaderSize = 128;

// True when the file starts with the engine magic (then it is read as an engine, not ONNX).
bool is_engine_file(const std::string& path);

// Writes `model` (already optimized) with `manifest` to `path`.
Status write_engine_file(const std::string& path, const Model& model, const nlohmann::json& manifest);

struct LoadedEngineFile {
  Model model;               // initializers view the mapped weights
  nlohmann::json manifest;
};
Expected<LoadedEngineFile> read_engine_file(const std::string& path);

// 64-bit hash used for the checksum (fast: 8 bytes per step, 4 lanes).
uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);

}  // namespace ingot
