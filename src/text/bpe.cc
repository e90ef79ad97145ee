// Byte-pair encoding as HF `tokenizers` runs it: a word starts as its characters (unknown ones
// become unk, byte fallback, or vanish) and the adjacent pair of lowest merge rank is merged
// until none is left. Results are cached per word; the cache is shared and mutex-guarded so
// concurrent encode calls are safe.
#include <mutex>
#include <queue>

#include <nlohmann/json.hpp>

#include "text/model.h"

namespace ingot::text {
namespace {

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
};

struct MergeTarget {
  uint32_t rank;
  int64_t new_id;
};

uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

class Bpe final : public Model {
 public:
  Bpe(Vocab vocab, std::unordered_map<uint64_t, MergeTarget> merges, BpeOptions o)
      : vocab_(std::move(vocab)), merges_(std::move(merges)), o_(std::move(o)) {}

  Status tokenize(const std::string& word, std::vector<Token>& out) const override {
    if (o_.ignore_merges) {
      if (auto id = vocab_.find(word)) {
        out.push_back({*id, word});
        return Status::ok();
      }
    }
    {
      std::lock_guard<std::mutex> lock(cache_mu_);
      auto it = cache_.find(word);
      if (it != cache_.end()) {
        for (int64_t id : it->second) out.push_back({id, *vocab_.token(id)});
        return Status::ok();
      }
    }
    std::vector<int64_t> ids;
    INGOT_RETURN_IF_ERROR(merge_word(word, ids));
    for (int64_t id : ids) out.push_back({id, *vocab_.token(id)});
    if (word.size() < kMaxCachedWordBytes) {
      std::lock_guard<std::mutex> lock(cache_mu_);
      if (cache_.size() < kCacheCapacity) cache_.emplace(word, std::move(ids));
    }
    return Status::ok();
  }

  const Vocab& vocab() const override { return vocab_; }

 private:
  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kMaxCachedWordBytes = 256;

  struct Symbol {
    int64_t id;
    int prev, next;
    bool alive;
  };
  struct Candidate {
    uint32_t rank;
    int pos;
    int64_t new_id;
    // priority_queue is a max-heap: lowest rank first, then leftmost position.
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };

  Status merge_word(const std::string& w, std::vector<int64_t>& ids) const {
    std::vector<int64_t> initial;
    int64_t pending_unk = -1;  // an unk not yet emitted (fuse_unk grows it), or -1
    auto flush_unk = [&] {
      if (pending_unk >= 0) initial.push_back(pending_unk);
      pending_unk = -1;
    };
    for (size_t i = 0; i < w.size();) {
      size_t len = 1;
      while (i + len < w.size() && (static_cast<unsigned char>(w[i + len]) & 0xC0) == 0x80) ++len;
      std::string s;
      if (i > 0) s = o_.continuing_subword_prefix;
      s.append(w, i, len);
      if (i + len == w.size()) s += o_.end_of_word_suffix;
      if (auto id = vocab_.find(s)) {
        flush_unk();
        initial.push_back(*id);
      } else {
        bool done = false;
        if (o_.byte_fallback) {
          std::vector<int64_t> bytes;
          for (size_t k = 0; k < len; ++k) {
            char code[8];
            std::snprintf(code, sizeof code, "<0x%02X>", static_cast<unsigned char>(w[i + k]));
            auto id = vocab_.find(code);
            if (!id) break;
            bytes.push_back(*id);
          }
          if (bytes.size() == len) {
            // HF does not flush a pending unk here; it is emitted before the next known char.
            initial.insert(initial.end(), bytes.begin(), bytes.end());
            done = true;
          }
        }
        if (!done && o_.unk_token) {
          auto unk = vocab_.find(*o_.unk_token);
          if (!unk) return invalid_model("BPE: unk_token \"" + *o_.unk_token + "\" is not in the vocabulary");
          if (pending_unk >= 0 && !o_.fuse_unk) flush_unk();
          pending_unk = *unk;
        }
        // No unk token: HF drops the character silently.
      }
      i += len;
    }
    flush_unk();

    const int n = static_cast<int>(initial.size());
    std::vector<Symbol> sym(n);
    for (int k = 0; k < n; ++k) sym[k] = {initial[k], k - 1, k + 1 < n ? k + 1 : -1, true};
    std::priority_queue<Candidate> queue;
    auto push_pair = [&](int left) {
      int right = sym[left].next;
      if (right < 0) return;
      auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
      if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
    };
    for (int k = 0; k + 1 < n; ++k) push_pair(k);
    while (!queue.empty()) {
      Candidate top = queue.top();
      queue.pop();
      Symbol& left = sym[top.pos];
      if (!left.alive || left.next < 0) continue;
      // Skip entries made stale by an earlier merge.
      auto it = merges_.find(pair_key(left.id, sym[left.next].id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;
      int right = left.next;
      left.id = top.new_id;
      left.next = sym[right].next;
      sym[right].alive = false;
      if (left.next >= 0) sym[left.next].prev = top.pos;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(top.pos);
    }
    for (int k = n > 0 ? 0 : -1; k >= 0; k = sym[k].next) ids.push_back(sym[k].id);
    return Status::ok();
  }

  Vocab vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  BpeOptions o_;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

std::optional<std::string> optional_string(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<std::string>();
}

}  // namespace

// Called inside the loader's try block: nlohmann exceptions are caught there.
Expected<std::unique_ptr<Model>> bpe_from_json(const nlohmann::json& j) {
  if (j.contains("dropout") && j.at("dropout").is_number() && j.at("dropout").get<double>() > 0)
    return unsupported("BPE dropout is not supported (it makes encoding random)");
  INGOT_ASSIGN_OR_RETURN(Vocab vocab, vocab_from_json(j.at("vocab")));
  BpeOptions o;
  o.unk_token = optional_string(j, "unk_token");
  o.continuing_subword_prefix = optional_string(j, "continuing_subword_prefix").value_or("");
  o.end_of_word_suffix = optional_string(j, "end_of_word_suffix").value_or("");
  o.fuse_unk = j.value("fuse_unk", false);
  o.byte_fallback = j.value("byte_fallback", false);
  o.ignore_merges = j.value("ignore_merges", false);

  std::unordered_map<uint64_t, MergeTarget> merges;
  const auto& jm = j.at("merges");
  if (!jm.is_array()) return invalid_model("model.merges: expected an array");
  const size_t prefix_len = o.continuing_subword_prefix.size();
  for (size_t rank = 0; rank < jm.size(); ++rank) {
    const auto& m = jm[rank];
    std::string a, b;
    if (m.is_string()) {  // "a b"
      const std::string s = m.get<std::string>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        return invalid_model("model.merges[" + std::to_string(rank) + "]: \"" + s + "\" is not two tokens");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2) {  // ["a", "b"]
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      return invalid_model("model.merges[" + std::to_string(rank) + "]: expected \"a b\" or [\"a\", \"b\"]");
    }
    auto ia = vocab.find(a), ib = vocab.find(b);
    if (!ia || !ib) return invalid_model("model.merges[" + std::to_string(rank) + "]: token not in vocabulary");
    std::string merged = a;
    if (prefix_len > 0 && b.compare(0, prefix_len, o.continuing_subword_prefix) == 0) merged.append(b, prefix_len);
    else merged += b;
    auto inew = vocab.find(merged);
    if (!inew) return invalid_model("model.merges[" + std::to_string(rank) + "]: \"" + merged + "\" is not in the vocabulary");
    merges[pair_key(*ia, *ib)] = {static_cast<uint32_t>(rank), *inew};
  }
  return std::unique_ptr<Model>(std::make_unique<Bpe>(std::move(vocab), std::move(merges), std::move(o)));
}

}  // namespace ingot::text
