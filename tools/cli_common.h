// Shared pieces of the ingot CLI: the subcommand interface, error printing, shape flags.
//
// Adding a subcommand: write tools/<name>.cc defining
//   ingot::cli::Command ingot::cli::setup_<name>(CLI::App& parent);
// and add X(<name>) to INGOT_CLI_COMMANDS below. setup_<name> registers its options on a
// subcommand of `parent` and returns a function run after parsing that returns the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "printable.h"

// The subcommands, in the order `ingot --help` lists them.
#define INGOT_CLI_COMMANDS(X) \
  X(inspect)                  \
  X(build)                    \
  X(run)                      \
  X(bench)                    \
  X(compare)

namespace ingot {
class Engine;
class ExecutionContext;
struct EngineOptions;
}  // namespace ingot

namespace ingot::cli {

// Exit codes: 0 success, 1 error (bad model, bad input, unsupported), 2 bad usage.
constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2;

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // called when this subcommand was given; returns the exit code
};

#define INGOT_CLI_DECLARE(name) Command setup_##name(CLI::App& parent);
INGOT_CLI_COMMANDS(INGOT_CLI_DECLARE)
#undef INGOT_CLI_DECLARE

// Prints "ingot: error: <message>" as one line on stderr (newlines in the message become
// "; ") and returns kExitError (kExitUsage for usage_error).
int error(const std::string& message);
int error(const Status& st);
int usage_error(const std::string& message);
// One line "note: ..." on stdout: things the user may want to know but that are not errors.
void note(const std::string& message);
// For a CPU engine of precision bf16 on a CPU where bf16 products do not pay (no AMX), the note
// that they run in float32 here; "" otherwise.
std::string cpu_bf16_note(const std::string& device, const std::string& precision);

// "name:1x128,other:1x128" (trtexec's --shapes). Scalars: "name:" or "name:scalar".
// Names may contain ':' (the last ':' separates the shape). Error: bad usage.
Expected<std::map<std::string, Shape>> parse_shapes(const std::string& flag, const std::string& spec);
// "1x128" -> {1, 128}.
Expected<Shape> parse_dims(const std::string& dims);

// "name=FILE" of --input.
Expected<std::pair<std::string, std::string>> parse_name_eq_file(const std::string& flag, const std::string& spec);

// --device, --precision, --io-precision, --no-cuda-graph, --tf32: the engine to build when run, bench or
// compare is given an ONNX model. An engine file carries its own device and precision (a
// --device that disagrees with it is an error).
struct DeviceFlags {
  std::string device;  // "": the engine file's device, cpu for an ONNX model
  std::string precision = "fp32";
  std::string io_precision = "model";
  bool no_cuda_graph = false;
  bool tf32 = false;
};
void add_device_flags(CLI::App* app, DeviceFlags& flags);
void apply_device_flags(const DeviceFlags& flags, EngineOptions& eo);
// The inputs in the order and dtypes the ONNX model declares, for a run of the model itself (ONNX
// Runtime, the model through ingot): those that --io-precision fp16 made float16 are widened back
// to float32, which is exact.
std::vector<std::pair<std::string, Tensor>> inputs_as_model_declares(const Engine& engine,
                                                                     const std::map<std::string, Tensor>& inputs);
// Device memory of an engine and one of its contexts, one line ("" for cpu engines).
std::string describe_device_memory(const Engine& engine, const ExecutionContext* ctx);

// Human-readable byte count: "1.5 MiB".
std::string human_bytes(double bytes);

}  // namespace ingot::cli
