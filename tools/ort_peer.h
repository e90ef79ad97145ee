// Driving ONNX Runtime in a peer process, for `ingot bench --against ort` and
// `ingot compare --against ort`. ingot never links ONNX Runtime: it starts bench/ort_peer.py
// (a python3 that can `import onnxruntime`) or bench/ort_peer.js (node with npm's
// onnxruntime-node, installed by scripts/install_ort.sh into .deps/ort-node) and speaks the
// line protocol written at the top of those scripts over the peer's stdin/stdout. The peer's
// stderr goes to a temporary file whose last line is quoted when the peer fails.
//
// Where things are looked for:
//   python:  $INGOT_ORT_PYTHON if set, else python3 on PATH (it must `import onnxruntime`)
//   node:    node on PATH, with the package at $INGOT_ORT_NODE_DIR if set (the onnxruntime-node
//            package directory, or a prefix holding node_modules/onnxruntime-node), else
//            .deps/ort-node under the current directory or the directories above the ingot binary
//   scripts: bench/ort_peer.{py,js} in the directories above the ingot binary, or under the
//            current directory
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ingot/status.h"

namespace ingot::cli {

class OrtPeer {
 public:
  // `which`: "auto" (python first, then node), "python" or "node". `flag` names the option
  // in messages ("--against ort"). Error when no ONNX Runtime is found: the one-line message
  // users see ("--against ort: no ONNX Runtime found (tried ...; run scripts/install_ort.sh)").
  static Expected<std::unique_ptr<OrtPeer>> start(const std::string& which, const std::string& flag);
  ~OrtPeer();
  OrtPeer(const OrtPeer&) = delete;
  OrtPeer& operator=(const OrtPeer&) = delete;

  // Loads the model with intra_op_num_threads = threads, inter_op_num_threads = 1, all graph
  // optimizations, sequential execution.
  Status load(const std::string& model, int threads);
  // Inputs for later runs, from an .npz (keys are input names).
  Status set_inputs(const std::string& npz);
  // Runs n times, each run after idle_ms asleep (ingot bench --idle-time); latencies in ms,
  // measured inside the peer around the run call.
  Expected<std::vector<double>> run(int n, double idle_ms = 0);
  // Runs once and writes the outputs to an .npz (keys are output names).
  Status save_outputs(const std::string& npz);
  // The peer's peak resident memory so far (getrusage high-water), KiB.
  Expected<int64_t> max_rss_kb();

  // "onnxruntime-node 1.30.0 (node 20.20.2)" / "onnxruntime 1.19.2 (python 3.11.2)".
  const std::string& description() const { return description_; }
  const std::string& kind() const { return kind_; }  // "python" or "node"
  const std::string& version() const { return version_; }
  // Peak RSS of the peer before the model was loaded (KiB).
  int64_t baseline_rss_kb() const { return baseline_rss_kb_; }
  // Median cost of an empty await in the node peer (ms); 0 for python.
  double await_overhead_ms() const { return await_overhead_ms_; }

 private:
  OrtPeer() = default;
  Status send(const std::string& line);
  // Reads one reply line; "ok REST" gives REST, "error MSG" gives an error.
  Expected<std::string> receive(double timeout_s);
  Expected<std::string> request(const std::string& line, double timeout_s = 3600);
  std::string stderr_tail() const;

  int pid_ = -1, to_ = -1, from_ = -1;
  std::string buffer_, stderr_path_, description_, kind_, version_;
  int64_t baseline_rss_kb_ = 0;
  double await_overhead_ms_ = 0;
};

// The ONNX model ONNX Runtime runs for the model or engine file `given`, whose engine reports
// `source_model` (Engine::source_model(): the file itself for an ONNX model, the model an engine
// was built from). Error, naming both, when that model is no longer there.
Expected<std::string> ort_model_for(const std::string& given, const std::string& source_model);

// Peak resident memory of this process so far (getrusage high-water), KiB.
int64_t self_max_rss_kb();

}  // namespace ingot::cli
