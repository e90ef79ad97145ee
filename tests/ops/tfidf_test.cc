// TfIdfVectorizer: hand-computed skip-gram counts, weighting modes, attribute errors.
#include "op_test_util.h"

namespace ingot::testing {
namespace {


// Pool: unigrams {1}, {3}; bigrams {1,2}, {2,1}, {1,3}. Uni- and bigrams, one skip.
Attributes tfidf_attrs(const std::string& mode, std::vector<int64_t> indexes, std::vector<float> weights = {}) {
  Attributes a;
  a.set("min_gram_length", int_attr(1));
  a.set("max_gram_length", int_attr(2));
  a.set("max_skip_count", int_attr(1));
  a.set("mode", string_attr(mode));
  a.set("pool_int64s", ints_attr({1, 3, 1, 2, 2, 1, 1, 3}));
  a.set("ngram_counts", ints_attr({0, 2}));
  a.set("ngram_indexes", ints_attr(std::move(indexes)));
  if (!weights.empty()) {
    Attribute w;
    w.kind = Attribute::Kind::kFloats;
    w.floats = std::move(weights);
    a.set("weights", w);
  }
  return a;
}

std::string load_error(Attributes attrs, Tensor x) {
  auto e = Engine::from_model(single_node_model("TfIdfVectorizer", {x}, 1, std::move(attrs), 9));
  if (!e) return e.status().message();
  auto out = (*e)->create_context()->run({{"in0", x}});
  return out ? "" : out.status().message();
}

TEST(TfIdfVectorizer, HandComputedSkipGrams) {
  // Row 0 = [1 2 1 2 3]: unigrams (distance 1 only) 1 x2, 3 x1; distance-1 bigrams (1,2) x2,
  // (2,1) x1, (2,3); distance-2 bigrams (1,1), (2,2), (1,3) x1. Row 1 = [3 3 0 0 0]: 3 x2.
  Tensor x = make<int32_t>({2, 5}, {1, 2, 1, 2, 3, 3, 3, 0, 0, 0});
  auto out = run_single_node("TfIdfVectorizer", {x}, 1, tfidf_attrs("TF", {0, 1, 2, 3, 4}), 9);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 5}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 1, 2, 1, 1, 0, 2, 0, 0, 0}));

  // 1-D int64 input gives a 1-D output.
  Tensor x1 = make<int64_t>({5}, {1, 2, 1, 2, 3});
  out = run_single_node("TfIdfVectorizer", {x1}, 1, tfidf_attrs("TF", {0, 1, 2, 3, 4}), 9);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (Shape{5}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 1, 2, 1, 1}));
}

TEST(TfIdfVectorizer, PermutedIndexesAndWeights) {
  // Reversed coordinates: counts land at [1, 1, 2, 1, 2]. Weights are per output coordinate.
  Tensor x = make<int64_t>({5}, {1, 2, 1, 2, 3});
  auto out = run_single_node("TfIdfVectorizer", {x}, 1, tfidf_attrs("TF", {4, 3, 2, 1, 0}), 9);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 1, 2, 1, 2}));
  out = run_single_node("TfIdfVectorizer", {x}, 1, tfidf_attrs("TFIDF", {4, 3, 2, 1, 0}, {1, 2, 3, 4, 5}), 9);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2, 6, 4, 10}));
  // IDF: the weight wherever the n-gram occurs; coordinate 6 never occurs.
  Tensor y = make<int64_t>({2}, {3, 5});
  out = run_single_node("TfIdfVectorizer", {y}, 1, tfidf_attrs("IDF", {0, 1, 2, 3, 6}, {1, 2, 3, 4, 5, 6, 7}), 9);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, 2, 0, 0, 0, 0, 0}));
}

TEST(TfIdfVectorizer, BadAttributesAndInputs) {
  Tensor x = make<int64_t>({5}, {1, 2, 1, 2, 3});
  EXPECT_NE(load_error(tfidf_attrs("TF", {0, 1, 2, 3}), x).find("ngram_indexes has 4 entries"), std::string::npos);
  EXPECT_NE(load_error(tfidf_attrs("BM25", {0, 1, 2, 3, 4}), x).find("mode must be"), std::string::npos);
  EXPECT_NE(load_error(tfidf_attrs("TF", {0, 1, 2, 3, -1}), x).find("out of range"), std::string::npos);
  EXPECT_NE(load_error(tfidf_attrs("TFIDF", {0, 1, 2, 3, 4}, {1, 2}), x).find("weights has 2 entries"),
            std::string::npos);

  Attributes odd = tfidf_attrs("TF", {0, 1, 2, 3});
  odd.set("ngram_counts", ints_attr({0, 1}));  // 7 items left for bigrams
  EXPECT_NE(load_error(odd, x).find("not a multiple of 2"), std::string::npos);

  Attributes lengths = tfidf_attrs("TF", {0, 1, 2, 3, 4});
  lengths.set("min_gram_length", int_attr(3));
  EXPECT_NE(load_error(lengths, x).find("max_gram_length (2) must be >= min_gram_length (3)"), std::string::npos);

  Attributes strings = tfidf_attrs("TF", {0, 1, 2, 3, 4});
  Attribute ps;
  ps.kind = Attribute::Kind::kStrings;
  ps.strings = {"a", "b"};
  strings.set("pool_strings", ps);
  EXPECT_NE(load_error(strings, x).find("pool_strings and pool_int64s"), std::string::npos);

  Tensor x3 = make<int64_t>({1, 1, 5}, {1, 2, 1, 2, 3});
  EXPECT_NE(load_error(tfidf_attrs("TF", {0, 1, 2, 3, 4}), x3).find("[C] or [N, C]"), std::string::npos);
  Tensor xf = make<float>({5}, {1, 2, 1, 2, 3});
  EXPECT_NE(load_error(tfidf_attrs("TF", {0, 1, 2, 3, 4}), xf).find("int32, int64"), std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
