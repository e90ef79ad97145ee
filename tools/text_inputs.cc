#include "text_inputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <type_traits>

#include "ir/dispatch.h"
#include "random_inputs.h"

namespace ingot::cli {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// "text" with quotes, and control characters, quotes and backslashes escaped.
std::string quoted(const std::string& s, size_t max_chars = 60) {
  std::string out = "\"";
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (n >= max_chars && (c & 0xC0) != 0x80) {
      out += "...";
      break;
    }
    if ((c & 0xC0) != 0x80) ++n;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string field_list() { return "input_ids, attention_mask, token_type_ids, position_ids"; }

// Fills t (already shaped) from one int64 per element.
void fill_from(Tensor& t, const std::vector<int64_t>& values) {
  if (t.dtype() == DType::kBool) {
    bool* d = t.data<bool>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = values[i] != 0;
    return;
  }
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_integral_v<T>) d[i] = T(values[i]);
      else d[i] = T(float(values[i]));
    }
  });
}

// Reads `n` floats of a float tensor from element `offset` as doubles.
std::vector<double> read_doubles(const Tensor& t, int64_t offset, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  bool done = dispatch_float(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d = t.data<T>() + offset;
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = double(float(d[i]));
  });
  if (!done) {
    for (int64_t i = 0; i < n; ++i) out[size_t(i)] = t.scalar_as_double(offset + i);
  }
  return out;
}

// Softmax, then the k most probable (NaN last), best first.
std::vector<std::pair<int64_t, double>> top_k_softmax(const std::vector<double>& logits, int k) {
  double mx = -INFINITY;
  for (double v : logits) {
    if (!std::isnan(v)) mx = std::max(mx, v);
  }
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::isnan(logits[i]) ? 0.0 : std::exp(logits[i] - mx);
    sum += p[i];
  }
  for (size_t i = 0; i < p.size(); ++i) p[i] = std::isnan(logits[i]) || !(sum > 0) ? NAN : p[i] / sum;
  std::vector<int64_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t kk = std::min(size_t(std::max(k, 1)), idx.size());
  auto better = [&](int64_t a, int64_t b) {
    double pa = p[size_t(a)], pb = p[size_t(b)];
    if (std::isnan(pa) != std::isnan(pb)) return std::isnan(pb);
    if (pa != pb) return pa > pb;
    return a < b;
  };
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(kk), idx.end(), better);
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i = 0; i < kk; ++i) out.push_back({idx[i], p[size_t(idx[i])]});
  return out;
}

std::string fmt_prob(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", p);
  return buf;
}

}  // namespace

TextField text_field_for(const std::string& input_name) {
  const std::string n = lower(input_name);
  static const std::set<std::string> kIds = {"input_ids", "ids", "input", "input_id", "token_ids", "tokens",
                                             "inputs", "input_ids:0"};
  static const std::set<std::string> kMask = {"attention_mask", "mask", "input_mask", "attn_mask",
                                              "attention_mask:0", "input_mask:0"};
  static const std::set<std::string> kTypes = {"token_type_ids", "segment_ids", "type_ids", "token_types",
                                               "segment_ids:0", "token_type_ids:0"};
  static const std::set<std::string> kPositions = {"position_ids", "positions", "position_ids:0"};
  if (kIds.count(n)) return TextField::kInputIds;
  if (kMask.count(n)) return TextField::kAttentionMask;
  if (kTypes.count(n)) return TextField::kTokenTypeIds;
  if (kPositions.count(n)) return TextField::kPositionIds;
  // Looser: names that contain one of the fields (after the exact names, so "input_ids" wins).
  if (contains(n, "token_type") || contains(n, "segment")) return TextField::kTokenTypeIds;
  if (contains(n, "position")) return TextField::kPositionIds;
  if (contains(n, "mask")) return TextField::kAttentionMask;
  if (contains(n, "input_ids") || contains(n, "token_ids")) return TextField::kInputIds;
  return TextField::kNone;
}

const char* text_field_name(TextField f) {
  switch (f) {
    case TextField::kInputIds: return "input_ids";
    case TextField::kAttentionMask: return "attention_mask";
    case TextField::kTokenTypeIds: return "token_type_ids";
    case TextField::kPositionIds: return "position_ids";
    case TextField::kNone: break;
  }
  return "none";
}

Expected<TextBatch> encode_text_batch(const Engine& engine, const text::Tokenizer& tokenizer,
                                      const std::vector<std::string>& texts, const std::vector<std::string>& pairs,
                                      std::optional<size_t> max_length, const std::set<std::string>& given) {
  const std::string& mpath = engine.model().path;
  if (texts.empty()) return invalid_argument("no text given");
  if (!pairs.empty() && pairs.size() != texts.size()) {
    return invalid_argument(std::to_string(pairs.size()) + " text pair(s) for " + std::to_string(texts.size()) +
                            " text(s): give one --text-pair per --text, or none");
  }
  if (max_length && *max_length == 0) return invalid_argument("--max-length must be at least 1");
  const int64_t batch = int64_t(texts.size());

  // Which input gets what, and whether the model fixes the batch or the sequence length.
  TextBatch out;
  std::optional<int64_t> fixed_len;
  std::string fixed_len_input;
  for (const IoInfo& io : engine.inputs()) {
    if (given.count(io.name)) continue;
    TextField f = text_field_for(io.name);
    if (f == TextField::kNone) {
      return invalid_argument(mpath + ": model input '" + io.name +
                              "' cannot be made from text (the tokenizer gives " + field_list() +
                              ", matched by name); give it with --input " + io.name + "=FILE.npy");
    }
    if (io.dtype != DType::kUndefined && io.dtype != DType::kBool &&
        !(dtype_is_supported(io.dtype) && (dtype_is_integer(io.dtype) || dtype_is_float(io.dtype)))) {
      return invalid_argument(mpath + ": model input '" + io.name + "' (" + text_field_name(f) + ") has dtype " +
                              dtype_name(io.dtype) + ", which ingot cannot fill from text");
    }
    if (io.shape) {
      const SymShape& s = *io.shape;
      if (s.size() == 1 && batch != 1) {
        return invalid_argument(mpath + ": model input '" + io.name + "' has rank 1 " + sym_shape_str(s) +
                                " (one sequence), but " + std::to_string(batch) + " texts were given");
      }
      if (s.size() != 1 && s.size() != 2) {
        return invalid_argument(mpath + ": model input '" + io.name + "' (" + text_field_name(f) + ") has rank " +
                                std::to_string(s.size()) + " " + sym_shape_str(s) +
                                "; text inputs are [batch, sequence] or [sequence]");
      }
      if (s.size() == 2 && s[0].known() && s[0].value != batch) {
        return invalid_argument(mpath + ": model input '" + io.name + "' has a fixed batch of " +
                                std::to_string(s[0].value) + " " + sym_shape_str(s) + ", but " +
                                std::to_string(batch) + " text(s) were given");
      }
      const Dim& seq = s.back();
      if (seq.known()) {
        if (fixed_len && *fixed_len != seq.value) {
          return invalid_argument(mpath + ": inputs '" + fixed_len_input + "' and '" + io.name +
                                  "' fix different sequence lengths (" + std::to_string(*fixed_len) + " and " +
                                  std::to_string(seq.value) + ")");
        }
        fixed_len = seq.value;
        fixed_len_input = io.name;
      }
    }
    out.fields[io.name] = f;
  }
  if (fixed_len && *fixed_len <= 0) {
    return invalid_argument(mpath + ": input '" + fixed_len_input + "' has a sequence length of " +
                            std::to_string(*fixed_len));
  }

  text::EncodeOptions eo;
  eo.add_special_tokens = true;
  if (max_length) eo.truncation_max_length = *max_length;
  if (fixed_len) {
    size_t len = size_t(*fixed_len);
    eo.truncation_max_length = eo.truncation_max_length ? std::min(*eo.truncation_max_length, len) : len;
    eo.padding = text::EncodeOptions::Padding::kFixed;
    eo.pad_to = len;
  } else {
    eo.padding = text::EncodeOptions::Padding::kLongest;
  }
  INGOT_ASSIGN_OR_RETURN(out.encodings, tokenizer.encode_batch(texts, pairs.empty() ? nullptr : &pairs, eo));
  if (out.encodings.size() != texts.size()) return internal_error("the tokenizer returned a wrong batch size");
  const size_t seq = out.encodings[0].ids.size();
  for (const auto& e : out.encodings) {
    if (e.ids.size() != seq || e.attention_mask.size() != seq || e.type_ids.size() != seq) {
      return internal_error("the tokenizer returned encodings of different lengths in one padded batch");
    }
  }
  if (seq == 0) return invalid_argument("the tokenizer gave no tokens for the text(s)");
  if (fixed_len && int64_t(seq) != *fixed_len) {
    return invalid_argument("the texts encode to " + std::to_string(seq) + " tokens, but model input '" +
                            fixed_len_input + "' needs exactly " + std::to_string(*fixed_len));
  }
  // An engine's profiles bound the sequence: say so here, where --max-length is the remedy
  // (the run would refuse the shape naming only the profiles).
  if (!fixed_len && !engine.profiles().empty()) {
    int64_t longest = -1;
    std::string longest_input;
    for (const Profile& p : engine.profiles())
      for (const auto& [name, f] : out.fields) {
        auto it = p.max.find(name);
        if (it != p.max.end() && !it->second.empty() && it->second.back() > longest) {
          longest = it->second.back();
          longest_input = name;
        }
      }
    if (longest >= 0 && int64_t(seq) > longest) {
      return invalid_argument(mpath + ": the texts encode to " + std::to_string(seq) +
                              " tokens, but the engine's profiles take at most " +
                              std::to_string(longest) + " (input '" + longest_input + "'): use --max-length " +
                              std::to_string(longest) + " to truncate, or rebuild with a longer --max-shapes");
    }
  }

  const Graph& g = engine.model().graph;
  for (const auto& [name, f] : out.fields) {
    const IoInfo* io = engine.find_input(name);
    std::vector<int64_t> values;
    values.reserve(size_t(batch) * seq);
    for (const auto& e : out.encodings) {
      switch (f) {
        case TextField::kInputIds: values.insert(values.end(), e.ids.begin(), e.ids.end()); break;
        case TextField::kAttentionMask:
          values.insert(values.end(), e.attention_mask.begin(), e.attention_mask.end());
          break;
        case TextField::kTokenTypeIds: values.insert(values.end(), e.type_ids.begin(), e.type_ids.end()); break;
        case TextField::kPositionIds: {
          // 0, 1, ... over the real tokens (HF's cumsum(mask) - 1); padding gets 0... or the
          // last position (left padding: 0, right padding: anything, it is masked).
          int64_t pos = 0;
          for (size_t i = 0; i < seq; ++i) {
            values.push_back(e.attention_mask[i] ? pos : 0);
            if (e.attention_mask[i]) ++pos;
          }
          break;
        }
        case TextField::kNone: break;
      }
    }
    // Ids must index the model's embedding tables.
    if (f == TextField::kInputIds || f == TextField::kTokenTypeIds || f == TextField::kPositionIds) {
      ValueId v = g.find(name);
      int64_t bound = v == kNoValue ? -1 : gather_bound(g, v);
      if (bound > 0) {
        for (size_t i = 0; i < values.size(); ++i) {
          if (values[i] >= 0 && values[i] < bound) continue;
          size_t row = i / seq, col = i % seq;
          std::string what;
          if (f == TextField::kInputIds) {
            what = "token id " + std::to_string(values[i]) + " (" +
                   quoted(out.encodings[row].tokens.size() > col ? out.encodings[row].tokens[col] : "") +
                   ", text " + std::to_string(row) + ", position " + std::to_string(col) + ")";
          } else {
            what = std::string(text_field_name(f)) + " value " + std::to_string(values[i]) + " (text " +
                   std::to_string(row) + ", position " + std::to_string(col) + ")";
          }
          std::string hint = f == TextField::kInputIds
                                 ? "; is the tokenizer the model's own? (its vocabulary has " +
                                       std::to_string(tokenizer.vocab_size()) + " tokens)"
                                 : (f == TextField::kPositionIds ? "; shorten the text or use --max-length" : "");
          return invalid_argument("input '" + name + "': " + what + " is outside the model's embedding table of " +
                                  std::to_string(bound) + " rows" + hint);
        }
      }
    }
    DType dt = io && io->dtype != DType::kUndefined ? io->dtype : DType::kInt64;
    Shape shape = io && io->shape && io->shape->size() == 1 ? Shape{int64_t(seq)} : Shape{batch, int64_t(seq)};
    Tensor t(dt, shape);
    fill_from(t, values);
    out.inputs[name] = std::move(t);
  }
  return out;
}

Expected<std::map<std::string, Tensor>> make_text_inputs(const Engine& engine, const text::Tokenizer& tokenizer,
                                                         const std::vector<std::string>& texts,
                                                         const std::vector<std::string>& pairs,
                                                         std::optional<size_t> max_length) {
  INGOT_ASSIGN_OR_RETURN(TextBatch b, encode_text_batch(engine, tokenizer, texts, pairs, max_length));
  return std::move(b.inputs);
}

Expected<std::vector<std::string>> read_labels(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found(path + ": no such file (or it cannot be read)");
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  while (!labels.empty() && labels.back().empty()) labels.pop_back();  // trailing blank lines
  if (labels.empty()) return invalid_argument(path + ": no labels (expected one label per line)");
  return labels;
}

Expected<TextPredictions> text_predictions(const Engine& engine, const text::Tokenizer& tokenizer,
                                           const TextBatch& batch, const std::vector<NamedTensor>& outputs,
                                           const std::vector<std::string>& labels, int top_k) {
  if (top_k < 1) return invalid_argument("--top-k must be at least 1");
  const int64_t nb = int64_t(batch.encodings.size());
  const int64_t seq = nb ? int64_t(batch.encodings[0].ids.size()) : 0;
  // The logits: by name first, then the first float [batch, N] or [batch, seq, V].
  auto fits = [&](const Tensor& t) {
    return dtype_is_float(t.dtype()) && (t.rank() == 2 || t.rank() == 3) && t.dim(0) == nb && t.numel() > 0;
  };
  const NamedTensor* logits = nullptr;
  for (const auto& nt : outputs) {
    if (contains(lower(nt.name), "logits") && fits(nt.tensor)) { logits = &nt; break; }
  }
  for (const auto& nt : outputs) {
    if (!logits && fits(nt.tensor)) logits = &nt;
  }
  if (!logits) {
    std::string list;
    for (const auto& nt : outputs)
      list += (list.empty() ? "" : ", ") + nt.name + " " + dtype_name(nt.tensor.dtype()) + " [" +
              shape_str(nt.tensor.shape()) + "]";
    return invalid_argument(engine.model().path + ": no output looks like logits ([" + std::to_string(nb) +
                            ", labels] or [" + std::to_string(nb) + ", sequence, vocab] float); its outputs: " +
                            (list.empty() ? "none" : list));
  }
  const Tensor& t = logits->tensor;
  TextPredictions p;
  p.output = logits->name;
  if (t.rank() == 2) {
    p.kind = TextPredictions::Kind::kClassifier;
    const int64_t c = t.dim(1);
    if (!labels.empty() && int64_t(labels.size()) != c) {
      return invalid_argument("the labels file has " + std::to_string(labels.size()) + " labels, but output '" +
                              logits->name + "' has " + std::to_string(c) + " classes");
    }
    for (int64_t b = 0; b < nb; ++b) {
      std::vector<Prediction> preds;
      for (auto [id, prob] : top_k_softmax(read_doubles(t, b * c, c), top_k)) {
        preds.push_back({id, labels.empty() ? "LABEL_" + std::to_string(id) : labels[size_t(id)], prob});
      }
      p.per_text.push_back(std::move(preds));
    }
    return p;
  }
  p.kind = TextPredictions::Kind::kLanguageModel;
  const int64_t s = t.dim(1), v = t.dim(2);
  if (s != seq && s != 1) {
    return invalid_argument("output '" + logits->name + "' has shape " + shape_str(t.shape()) +
                            ": its sequence length is neither the input's (" + std::to_string(seq) + ") nor 1");
  }
  if (!labels.empty() && int64_t(labels.size()) != v) {
    return invalid_argument("the labels file has " + std::to_string(labels.size()) + " labels, but output '" +
                            logits->name + "' has " + std::to_string(v) + " classes per position");
  }
  for (int64_t b = 0; b < nb; ++b) {
    int64_t pos = 0;
    if (s == seq) {
      const auto& mask = batch.encodings[size_t(b)].attention_mask;
      pos = -1;
      for (int64_t i = 0; i < seq; ++i) {
        if (mask[size_t(i)]) pos = i;
      }
      if (pos < 0) pos = seq - 1;
    }
    std::vector<Prediction> preds;
    for (auto [id, prob] : top_k_softmax(read_doubles(t, (b * s + pos) * v, v), top_k)) {
      std::string label;
      if (!labels.empty()) {
        label = labels[size_t(id)];
      } else if (auto d = tokenizer.decode({id}, false); d && !d->empty()) {
        label = *d;
      } else {
        label = tokenizer.id_to_token(id);
        if (label.empty()) label = "<id " + std::to_string(id) + ">";
      }
      preds.push_back({id, label, prob});
    }
    p.per_text.push_back(std::move(preds));
    p.positions.push_back(pos);
  }
  return p;
}

void print_text_predictions(std::ostream& os, const std::vector<std::string>& texts,
                            const std::vector<std::string>& pairs, const TextPredictions& p) {
  const bool lm = p.kind == TextPredictions::Kind::kLanguageModel;
  for (size_t i = 0; i < p.per_text.size(); ++i) {
    os << "text " << i << ": " << (i < texts.size() ? quoted(texts[i]) : std::string("?"));
    if (i < pairs.size()) os << " + " << quoted(pairs[i]);
    if (lm) {
      os << "  (next token after position " << (i < p.positions.size() ? p.positions[i] : 0) << ", output '"
         << p.output << "')\n";
    } else {
      os << "  (classifier, output '" << p.output << "')\n";
    }
    int rank = 1;
    for (const auto& pr : p.per_text[i]) {
      os << "  " << rank++ << ". ";
      if (lm) {
        os << quoted(pr.label, 40) << "  (id " << pr.id << ")  " << fmt_prob(pr.probability) << "\n";
      } else {
        os << pr.label << "  " << fmt_prob(pr.probability) << "\n";
      }
    }
  }
}

// ---- command line

void add_text_options(CLI::App& app, TextRunOptions& o) {
  app.add_option("--tokenizer", o.tokenizer, "tokenizer.json (or a BERT vocab.txt) for --text")
      ->type_name("FILE");
  app.add_option("--text", o.texts, "text to tokenize as the model's input (repeat for a batch)")
      ->type_name("TEXT")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--text-pair", o.pairs, "second sequence of each --text (one per --text)")
      ->type_name("TEXT")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app.add_option("--labels", o.labels, "class labels for --text, one per line (default LABEL_i)")
      ->type_name("labels.txt");
  app.add_option("--top-k", o.top_k, "predictions printed per --text (default 5)")->check(CLI::Range(1, 1 << 30));
  app.add_option("--max-length", o.max_length, "truncate each --text (special tokens included) to N tokens")
      ->type_name("N")
      ->check(CLI::Range(size_t(1), size_t(1) << 40));
}

Status check_text_usage(const TextRunOptions& o) {
  if (!o.active()) {
    for (auto [given, flag] : {std::pair{!o.tokenizer.empty(), "--tokenizer"}, {!o.pairs.empty(), "--text-pair"},
                               {!o.labels.empty(), "--labels"}}) {
      if (given) return invalid_argument(std::string(flag) + " needs --text");
    }
    return Status::ok();
  }
  if (o.tokenizer.empty()) return invalid_argument("--text needs --tokenizer tokenizer.json");
  if (!o.pairs.empty() && o.pairs.size() != o.texts.size()) {
    return invalid_argument("--text-pair given " + std::to_string(o.pairs.size()) + " time(s) but --text " +
                            std::to_string(o.texts.size()) + " time(s): give one --text-pair per --text");
  }
  return Status::ok();
}

Expected<std::unique_ptr<TextRun>> TextRun::start(const Engine& engine, const TextRunOptions& o,
                                                  std::map<std::string, Tensor>& inputs,
                                                  std::map<std::string, std::string>& sources) {
  auto r = std::unique_ptr<TextRun>(new TextRun());
  r->o_ = o;
  auto tok = text::Tokenizer::from_file(o.tokenizer);
  if (!tok) return tok.status().with_context("--tokenizer: ");
  r->tokenizer_ = std::move(*tok);
  if (!o.labels.empty()) {
    auto labels = read_labels(o.labels);
    if (!labels) return labels.status().with_context("--labels: ");
    r->labels_ = std::move(*labels);
  }
  std::set<std::string> given;
  for (const auto& [name, t] : inputs) given.insert(name);
  std::optional<size_t> max_length;
  if (o.max_length) max_length = o.max_length;
  INGOT_ASSIGN_OR_RETURN(r->batch_, encode_text_batch(engine, *r->tokenizer_, o.texts, o.pairs, max_length, given));
  for (const auto& [name, t] : r->batch_.inputs) {
    inputs[name] = t;
    sources[name] = std::string("from --text (") + text_field_name(r->batch_.fields[name]) + ")";
  }
  return r;
}

Status TextRun::print(std::ostream& os, const Engine& engine, const std::vector<NamedTensor>& outputs) const {
  INGOT_ASSIGN_OR_RETURN(TextPredictions p,
                         text_predictions(engine, *tokenizer_, batch_, outputs, labels_, o_.top_k));
  print_text_predictions(os, o_.texts, o_.pairs, p);
  return Status::ok();
}

}  // namespace ingot::cli
