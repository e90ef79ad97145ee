// Text → model inputs, and model outputs → top-k predictions, for `ingot run --text` (and
// `ingot bench --text`).
//
//   auto tok = text::Tokenizer::from_file("tokenizer.json");
//   auto inputs = make_text_inputs(*engine, **tok, {"hello world", "hi"}, {}, std::nullopt);
//   auto outs = engine->create_context()->run(*inputs);
// or, to read the outputs back as predictions:
//   auto batch = encode_text_batch(*engine, **tok, texts, {}, std::nullopt);
//   auto outs = engine->create_context()->run(batch->inputs);
//   auto preds = text_predictions(*engine, **tok, *batch, *outs, labels, 5);
//   print_text_predictions(std::cout, texts, {}, *preds);
//
// make_text_inputs encodes the texts as one batch padded to the longest (or to the model's
// fixed sequence length) and fills every model input from the tokenizer's encodings by name:
//   input_ids       input_ids, ids, input, input_id, token_ids, tokens, *input_ids*
//   attention_mask  attention_mask, mask, input_mask, attn_mask, *attention_mask*, *mask*
//   token_type_ids  token_type_ids, segment_ids, type_ids, token_types, *token_type*, *segment*
//   position_ids    position_ids, positions, *position* (0, 1, ... over each row's real tokens)
// Each is made in the input's own dtype. An input that none of these names (or one of rank
// other than 2, or 1 for a single text) is an error naming it. Token ids that fall outside an
// embedding table the input indexes (a Gather over N rows) are an error naming the input, the
// id, its token and N.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <memory>

#include "ingot/status.h"
#include "ingot/tensor.h"
#include "runtime/engine.h"
#include "text/tokenizer.h"

namespace ingot::cli {

// What a model input was matched to.
enum class TextField { kNone, kInputIds, kAttentionMask, kTokenTypeIds, kPositionIds };
// By name, as listed above; kNone when no rule matches.
TextField text_field_for(const std::string& input_name);
const char* text_field_name(TextField f);  // "input_ids", ...

// `pairs` is empty or as long as `texts`. max_length (special tokens included) truncates;
// nullopt: no truncation beyond the model's fixed sequence length, if it has one.
Expected<std::map<std::string, Tensor>> make_text_inputs(const Engine& engine, const text::Tokenizer& tokenizer,
                                                         const std::vector<std::string>& texts,
                                                         const std::vector<std::string>& pairs,
                                                         std::optional<size_t> max_length);

// The same with what the outputs need to be read back: the padded encodings and which input
// got which field. Inputs named in `given` are left out (the caller has them from elsewhere).
struct TextBatch {
  std::map<std::string, Tensor> inputs;
  std::map<std::string, TextField> fields;
  std::vector<text::Encoding> encodings;  // one per text, padded to one length
};
Expected<TextBatch> encode_text_batch(const Engine& engine, const text::Tokenizer& tokenizer,
                                      const std::vector<std::string>& texts, const std::vector<std::string>& pairs,
                                      std::optional<size_t> max_length, const std::set<std::string>& given = {});

// labels.txt: one label per line (blank lines and a trailing newline do not count; "\r" is
// stripped).
Expected<std::vector<std::string>> read_labels(const std::string& path);

struct Prediction {
  int64_t id = 0;        // class index or token id
  std::string label;     // label (classifier) or decoded token (language model)
  double probability = 0;
};

struct TextPredictions {
  enum class Kind { kClassifier, kLanguageModel } kind = Kind::kClassifier;
  std::string output;                       // the output the logits came from
  std::vector<std::vector<Prediction>> per_text;  // top-k, best first
  std::vector<int64_t> positions;           // language model: the position read per text
};

// Reads the logits output ("logits" by name, else the first float output of rank 2 or 3 whose
// first dimension is the batch): rank 2 [batch, labels] is a sequence classifier, rank 3
// [batch, seq, vocab] a language model read at each row's last attention_mask==1 position.
// Softmax in double; top_k is clamped to the number of classes. labels, when not empty, must
// have one entry per class.
Expected<TextPredictions> text_predictions(const Engine& engine, const text::Tokenizer& tokenizer,
                                           const TextBatch& batch,
                                           const std::vector<NamedTensor>& outputs,
                                           const std::vector<std::string>& labels, int top_k);

// Per text:
//   text 0: "the text"  (classifier, output 'logits')
//     1. LABEL_1  0.512345
//     2. LABEL_0  0.487655
// A language model's lines read  `  1. " the"  (id 42)  0.012345`.
void print_text_predictions(std::ostream& os, const std::vector<std::string>& texts,
                            const std::vector<std::string>& pairs, const TextPredictions& p);

// ---- The command-line side, shared by `ingot run` and `ingot bench`.
struct TextRunOptions {
  std::string tokenizer;
  std::vector<std::string> texts, pairs;
  std::string labels;
  int top_k = 5;
  size_t max_length = 0;  // 0: none
  bool active() const { return !texts.empty(); }
};
// --tokenizer, --text, --text-pair, --labels, --top-k, --max-length.
void add_text_options(CLI::App& app, TextRunOptions& o);
// Flag combinations that make no sense (--text without --tokenizer, --text-pair counts, ...):
// a usage error (exit 2) before anything is loaded.
Status check_text_usage(const TextRunOptions& o);

// One `--text` run: the tokenizer, the labels and the encoded batch.
class TextRun {
 public:
  // Loads tokenizer and labels, encodes the texts and adds the model inputs not already in
  // `inputs` (with a line for `sources`, e.g. "from --text (input_ids)").
  static Expected<std::unique_ptr<TextRun>> start(const Engine& engine, const TextRunOptions& o,
                                                  std::map<std::string, Tensor>& inputs,
                                                  std::map<std::string, std::string>& sources);
  // The top-k block for the outputs of a run on those inputs.
  Status print(std::ostream& os, const Engine& engine, const std::vector<NamedTensor>& outputs) const;

  const TextBatch& batch() const { return batch_; }
  const text::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  TextRunOptions o_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::vector<std::string> labels_;
  TextBatch batch_;
};

}  // namespace ingot::cli
