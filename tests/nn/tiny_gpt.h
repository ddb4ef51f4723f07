// The tiny GPT the nn tests train and differentiate: 2 layers, 2 heads of 8, block 8, vocabulary 11.
#pragma once
#include "nn/gpt.h"

namespace nd::nn::testing {

inline GPTConfig tiny_gpt_config() {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 11;
  return c;
}

}  // namespace nd::nn::testing
