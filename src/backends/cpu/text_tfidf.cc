// TfIdfVectorizer (opset 9) for integer tokens: counts (skip-)n-grams of each input row that
// appear in the pool and writes them, optionally weighted, at the n-grams' output coordinates.
//
// Semantics follow ONNX's reference implementation (onnx/reference/ops/op_tfidf_vectorizer.py,
// itself a port of onnxruntime's kernel), which the conformance data is generated from:
//   * The pool holds n-grams grouped by length: ngram_counts[k] is where the (k+1)-grams start.
//     Each n-gram gets an id in pool order; ngram_indexes[id] is its output coordinate. Only
//     lengths in [min_gram_length, max_gram_length] are looked up (the others keep their ids).
//   * For every skip distance d = 1 .. max_skip_count+1 and every start position, the tokens
//     x[s], x[s+d], x[s+2d], ... are matched against the pool (a trie walk); each matched
//     prefix whose length is >= the current minimum counts once. Unigrams do not depend on d,
//     so they are counted for d = 1 only: after the first distance the minimum length becomes
//     max(min_gram_length, 2).
//   * Frequencies are accumulated per output coordinate. TF writes the count; IDF writes
//     weights[j] (or 1) where the count is nonzero; TFIDF writes count * weights[j] (or the
//     count). Like the reference and onnxruntime, weights are indexed by output coordinate j
//     (what sklearn-onnx emits), so with weights the list must cover every coordinate.
// String pools/inputs would need string tensors, which ingot does not have.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/kernel.h"

namespace ingot {
namespace {

enum class TfIdfMode { kTF, kIDF, kTFIDF };

class TfIdfVectorizerKernel : public OpKernel {
 public:
  Status init(const Node& node, int opset) override {
    (void)opset;
    const Attributes& a = node.attrs;
    auto int_attr = [&](const char* name, int64_t* out) -> Status {
      const Attribute* at = a.find(name);
      if (!at || at->kind != Attribute::Kind::kInt)
        return invalid_model(std::string("missing required int attribute '") + name + "'");
      *out = at->i;
      return Status::ok();
    };
    INGOT_RETURN_IF_ERROR(int_attr("min_gram_length", &min_gram_));
    INGOT_RETURN_IF_ERROR(int_attr("max_gram_length", &max_gram_));
    INGOT_RETURN_IF_ERROR(int_attr("max_skip_count", &max_skip_));
    if (min_gram_ < 1) return invalid_model("min_gram_length must be >= 1, got " + std::to_string(min_gram_));
    if (max_gram_ < min_gram_)
      return invalid_model("max_gram_length (" + std::to_string(max_gram_) + ") must be >= min_gram_length (" +
                           std::to_string(min_gram_) + ")");
    if (max_skip_ < 0) return invalid_model("max_skip_count must be >= 0, got " + std::to_string(max_skip_));

    const Attribute* mode = a.find("mode");
    if (!mode || mode->kind != Attribute::Kind::kString) return invalid_model("missing required string attribute 'mode'");
    if (mode->s == "TF") mode_ = TfIdfMode::kTF;
    else if (mode->s == "IDF") mode_ = TfIdfMode::kIDF;
    else if (mode->s == "TFIDF") mode_ = TfIdfMode::kTFIDF;
    else return invalid_model("mode must be \"TF\", \"IDF\" or \"TFIDF\", got \"" + mode->s + "\"");

    if (a.has("pool_strings")) {
      if (a.has("pool_int64s")) return invalid_model("pool_strings and pool_int64s cannot both be set");
      return unsupported("pool_strings needs string tensors: string tensors are not supported");
    }
    const Attribute* pool_attr = a.find("pool_int64s");
    if (!pool_attr || pool_attr->kind != Attribute::Kind::kInts)
      return invalid_model("missing attribute 'pool_int64s' (or 'pool_strings')");
    const std::vector<int64_t>& pool = pool_attr->ints;
    const Attribute* counts_attr = a.find("ngram_counts");
    if (!counts_attr || counts_attr->kind != Attribute::Kind::kInts)
      return invalid_model("missing required ints attribute 'ngram_counts'");
    const std::vector<int64_t>& counts = counts_attr->ints;
    const Attribute* idx_attr = a.find("ngram_indexes");
    if (!idx_attr || idx_attr->kind != Attribute::Kind::kInts)
      return invalid_model("missing required ints attribute 'ngram_indexes'");
    indexes_ = idx_attr->ints;
    weights_ = a.get_floats("weights");

    // ngram_counts: non-decreasing start offsets into the pool, one per n-gram length.
    const int64_t pool_size = int64_t(pool.size());
    for (size_t k = 0; k < counts.size(); ++k) {
      if (counts[k] < 0 || counts[k] > pool_size)
        return invalid_model("ngram_counts[" + std::to_string(k) + "] = " + std::to_string(counts[k]) +
                             " is outside the pool [0, " + std::to_string(pool_size) + "]");
      if (k > 0 && counts[k] < counts[k - 1])
        return invalid_model("ngram_counts must be non-decreasing, but ngram_counts[" + std::to_string(k) +
                             "] = " + std::to_string(counts[k]) + " < " + std::to_string(counts[k - 1]));
    }
    int64_t total_ngrams = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      int64_t n = int64_t(k) + 1;
      int64_t items = (k + 1 < counts.size() ? counts[k + 1] : pool_size) - counts[k];
      if (items % n != 0)
        return invalid_model("the " + std::to_string(n) + "-gram section of the pool (ngram_counts[" +
                             std::to_string(k) + "] = " + std::to_string(counts[k]) + ") has " +
                             std::to_string(items) + " items, not a multiple of " + std::to_string(n));
      total_ngrams += items / n;
    }
    if (int64_t(indexes_.size()) != total_ngrams)
      return invalid_model("ngram_indexes has " + std::to_string(indexes_.size()) + " entries but the pool holds " +
                           std::to_string(total_ngrams) + " n-grams");
    if (indexes_.empty()) return invalid_model("ngram_indexes is empty: the pool holds no n-grams");
    int64_t max_index = 0;
    for (size_t i = 0; i < indexes_.size(); ++i) {
      if (indexes_[i] < 0 || indexes_[i] >= int64_t(std::numeric_limits<int32_t>::max()))
        return invalid_model("ngram_indexes[" + std::to_string(i) + "] = " + std::to_string(indexes_[i]) +
                             " is out of range [0, 2^31-1)");
      max_index = std::max(max_index, indexes_[i]);
    }
    output_size_ = max_index + 1;
    if (!weights_.empty() && int64_t(weights_.size()) < output_size_)
      return invalid_model("weights has " + std::to_string(weights_.size()) + " entries but the output has " +
                           std::to_string(output_size_) +
                           " coordinates (max(ngram_indexes) + 1); weights are indexed by output coordinate");

    // Build the trie of n-grams whose length is in [min_gram_length, max_gram_length].
    nodes_.assign(1, TrieNode{});
    int64_t id = 1;  // 0 marks an inner node that ends no n-gram
    for (size_t k = 0; k < counts.size(); ++k) {
      int64_t n = int64_t(k) + 1;
      int64_t end = k + 1 < counts.size() ? counts[k + 1] : pool_size;
      int64_t num = (end - counts[k]) / n;
      if (n < min_gram_ || n > max_gram_) {
        id += num;
        continue;
      }
      for (int64_t g = 0; g < num; ++g, ++id) {
        int32_t cur = 0;
        for (int64_t t = 0; t < n; ++t) {
          int64_t key = pool[size_t(counts[k] + g * n + t)];
          auto it = nodes_[size_t(cur)].children.find(key);
          if (it == nodes_[size_t(cur)].children.end()) {
            int32_t next = int32_t(nodes_.size());
            nodes_[size_t(cur)].children.emplace(key, next);
            nodes_.push_back(TrieNode{});
            cur = next;
          } else {
            cur = it->second;
          }
        }
        nodes_[size_t(cur)].id = id;  // a repeated n-gram keeps the later id, as in the reference
      }
    }
    return Status::ok();
  }

  Status infer(InferContext& ctx) const override {
    if (!ctx.has_input(0)) return invalid_model("needs 1 input");
    DType dt = ctx.input_dtype(0);
    if (dt == DType::kString) return unsupported("string tensors are not supported");
    if (dt != DType::kInt32 && dt != DType::kInt64)
      return invalid_model("input must be int32, int64 or string, got " + dtype_name(dt));
    const Shape& s = ctx.input_shape(0);
    if (s.size() <= 1) {
      ctx.set_output(0, DType::kFloat32, {output_size_});
    } else if (s.size() == 2) {
      if (s[0] > 0 && s[0] > std::numeric_limits<int64_t>::max() / output_size_)
        return invalid_argument("output of " + std::to_string(s[0]) + " x " + std::to_string(output_size_) +
                                " elements is too large");
      ctx.set_output(0, DType::kFloat32, {s[0], output_size_});
    } else {
      return invalid_argument("input must have shape [C] or [N, C], got " + shape_str(s));
    }
    return Status::ok();
  }

  Status compute(ComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.dtype() == DType::kString) return unsupported("string tensors are not supported");
    if (x.dtype() != DType::kInt32 && x.dtype() != DType::kInt64)
      return invalid_model("input must be int32, int64 or string, got " + dtype_name(x.dtype()));
    int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    int64_t cols = x.rank() == 2 ? x.dim(1) : x.numel();
    Tensor& y = ctx.output(0);
    if (y.numel() != rows * output_size_) return internal_error("output shape does not match the input");
    std::vector<int64_t> tokens(static_cast<size_t>(std::max<int64_t>(cols, 0)));
    std::vector<int64_t> freq(static_cast<size_t>(output_size_));
    float* out = y.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      if (x.dtype() == DType::kInt32) {
        const int32_t* p = x.data<int32_t>() + r * cols;
        for (int64_t c = 0; c < cols; ++c) tokens[size_t(c)] = p[c];
      } else {
        const int64_t* p = x.data<int64_t>() + r * cols;
        for (int64_t c = 0; c < cols; ++c) tokens[size_t(c)] = p[c];
      }
      std::fill(freq.begin(), freq.end(), 0);
      count_row(tokens, freq);
      float* yr = out + r * output_size_;
      for (int64_t j = 0; j < output_size_; ++j) {
        int64_t f = freq[size_t(j)];
        switch (mode_) {
          case TfIdfMode::kTF: yr[j] = float(f); break;
          case TfIdfMode::kIDF: yr[j] = f > 0 ? (weights_.empty() ? 1.f : weights_[size_t(j)]) : 0.f; break;
          case TfIdfMode::kTFIDF: yr[j] = weights_.empty() ? float(f) : float(f) * weights_[size_t(j)]; break;
        }
      }
    }
    return Status::ok();
  }

 private:
  struct TrieNode {
    int64_t id = 0;
    std::unordered_map<int64_t, int32_t> children;
  };

  void count_row(const std::vector<int64_t>& x, std::vector<int64_t>& freq) const {
    const int64_t len = int64_t(x.size());
    if (len == 0 || nodes_[0].children.empty()) return;
    int64_t start_size = min_gram_;
    // With a minimum length >= 2, a distance >= len fits no n-gram, so larger ones are skipped.
    const int64_t max_distance = std::min(max_skip_, len - 1) + 1;
    for (int64_t d = 1; d <= max_distance; ++d) {
      const int64_t span = std::min(start_size - 1, len);  // capped: avoids overflow, same outcome
      for (int64_t s = 0; s < len; ++s) {
        if (s + d * span >= len) break;  // no n-gram of the minimum length starts here
        int32_t node = 0;
        int64_t item = s;
        for (int64_t n = 1; n <= max_gram_ && item < len; ++n, item += d) {
          const auto& ch = nodes_[size_t(node)].children;
          if (ch.empty()) break;
          auto it = ch.find(x[size_t(item)]);
          if (it == ch.end()) break;
          node = it->second;
          int64_t id = nodes_[size_t(node)].id;
          if (n >= start_size && id != 0) ++freq[size_t(indexes_[size_t(id - 1)])];
        }
      }
      // Unigrams do not depend on the skip distance: count them for the first one only.
      if (start_size == 1) {
        ++start_size;
        if (start_size > max_gram_) break;
      }
    }
  }

  int64_t min_gram_ = 1, max_gram_ = 1, max_skip_ = 0;
  TfIdfMode mode_ = TfIdfMode::kTF;
  std::vector<int64_t> indexes_;
  std::vector<float> weights_;
  int64_t output_size_ = 0;
  std::vector<TrieNode> nodes_;
};

}  // namespace

INGOT_REGISTER_KERNEL(cpu, "", TfIdfVectorizer, TfIdfVectorizerKernel);

}  // namespace ingot
