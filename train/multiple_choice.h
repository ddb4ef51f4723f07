// Multiple-choice evaluation the way llm.c and nanoGPT-era scripts score HellaSwag: each ending is
// appended to the shared context, the model's cross-entropy is taken over the ending's tokens only,
// and the ending with the least total loss (acc) or least mean loss per token (acc_norm) is chosen.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "dist/comm/comm.h"
#include "nn/gpt.h"

namespace nd::train {

struct ChoiceExample {
  std::string context;
  std::vector<std::string> endings;
  int label = 0;  // index of the right ending
};

// HellaSwag's jsonl: one object a line with "ctx", "endings" (strings) and "label" (an int or a
// digit string); blank lines are skipped. Input errors name the file and line.
std::vector<ChoiceExample> read_hellaswag(const std::string& path);

struct ChoiceLosses {
  std::vector<double> sum;   // per ending: the loss summed over its tokens
  std::vector<double> mean;  // per ending: sum / its token count
};

// `context` then each ending's ids, one row per ending in one forward (eval mode, no gradients).
// A row longer than the block size loses tokens from the left; every ending keeps at least one.
ChoiceLosses score_endings(const nn::GPT& model, const std::vector<int32_t>& context,
                           const std::vector<std::vector<int32_t>>& endings);

struct ChoiceAccuracy {
  int64_t examples = 0, correct = 0, correct_norm = 0;
  double acc() const { return examples ? static_cast<double>(correct) / static_cast<double>(examples) : 0.0; }
  double acc_norm() const {
    return examples ? static_cast<double>(correct_norm) / static_cast<double>(examples) : 0.0;
  }
};

// Every example scored once (rank r of `comm` takes examples r, r + N, ...; the counts are summed
// over the ranks). Each ending is encoded with a leading space, as a word that follows the context.
ChoiceAccuracy score_examples(const nn::GPT& model, const std::vector<ChoiceExample>& examples,
                              const Tokenizer& tokenizer, dist::Comm* comm);

}  // namespace nd::train
