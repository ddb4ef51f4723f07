// Text generation from a trained GPT: repeatedly run the model on the last block_size tokens,
// scale the last position's logits by 1/temperature, keep the top k and of those the smallest set
// holding top_p of the probability (nucleus sampling), and draw the next token.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "nn/gpt.h"
#include "tensor/random.h"

namespace nd::train {

struct SampleOptions {
  int max_new_tokens = 200;
  double temperature = 0.8;  // 0 = greedy (argmax)
  int top_k = 200;           // 0 or >= vocab = no truncation
  double top_p = 1.0;        // in (0, 1]; 1 = no truncation
  // Asked after each new token with the tokens generated so far (the context excluded): true ends
  // the generation there (a stop string was produced).
  std::function<bool(const std::vector<int32_t>& generated)> stop;
};

// logits (V) of one position -> the chosen id, drawing one uniform from `gen` unless greedy.
int32_t pick_token(const std::vector<float>& logits, const SampleOptions& options, Generator& gen);

// `context` (at least one id) followed by max_new_tokens generated ids. Runs without gradients
// with the model in eval mode (dropout off); restores the model's mode afterwards.
std::vector<int32_t> generate(nn::GPT& model, std::vector<int32_t> context, const SampleOptions& options,
                              Generator& gen);

}  // namespace nd::train
