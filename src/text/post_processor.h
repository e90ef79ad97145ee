// Post-processors (tokenizer.json "post_processor"): add the model's special tokens around one
// sequence or a pair and set type ids. TemplateProcessing, RobertaProcessing, BertProcessing,
// ByteLevel (a no-op on ids) and Sequence are supported.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ingot/status.h"
#include "text/tokenizer.h"

namespace ingot::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many tokens process() adds with add_special_tokens (truncation leaves room for them).
  virtual size_t added_tokens(bool is_pair) const = 0;
  // `encodings` holds one sequence or a pair; the result's parts are concatenated afterwards.
  virtual std::vector<Encoding> process(std::vector<Encoding> encodings, bool add_special_tokens) const = 0;
};

// [CLS] $A [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1, BERT's template.
std::unique_ptr<PostProcessor> make_bert_template(int64_t cls_id, int64_t sep_id);

// null gives nullptr and ok.
Expected<std::unique_ptr<PostProcessor>> post_processor_from_json(const nlohmann::json& j);

}  // namespace ingot::text
