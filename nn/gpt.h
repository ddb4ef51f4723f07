// GPT: token + position embedding, n_layer pre-norm blocks, a final LayerNorm, and an output head
// tied to the token embedding. Two ablation switches: use_layernorm (off: identity in place of
// every LayerNorm) and use_residual (off: each sublayer's output replaces x instead of adding).
#pragma once
#include "nn/layers.h"

namespace nd::nn {

struct GPTConfig {
  int n_layer = 6;
  int n_head = 6;
  int n_embd = 384;
  int block_size = 256;
  int vocab_size = 65;
  int padded_vocab_size = 0;  // 0 = vocab_size; rows past vocab_size are padding (never predicted)
  float dropout = 0.0f;
  bool bias = true;
  bool use_layernorm = true;
  bool use_residual = true;

  int vocab_rows() const { return padded_vocab_size > 0 ? padded_vocab_size : vocab_size; }
  // nd::Error naming the bad field, as a field (n_embd) or as the train flag (--n-embd).
  enum class FieldNames { Fields, Flags };
  void validate(FieldNames names = FieldNames::Fields) const;
};

class Block : public Module {
 public:
  Block(const GPTConfig& config, Generator& gen, Placement at);
  Variable forward(const Variable& x, Generator& dropout_gen) const;

 private:
  bool use_residual_;
  std::shared_ptr<LayerNorm> ln_1_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<LayerNorm> ln_2_;
  std::shared_ptr<MLP> mlp_;
};

class GPT : public Module {
 public:
  GPT(const GPTConfig& config, Generator& init_gen, Device device = Device::cpu(), DType dtype = DType::F32);

  struct Output {
    Variable logits;  // (B, T, vocab_rows)
    Variable loss;    // scalar mean cross-entropy; undefined without targets
  };
  // idx (B, T) i32 on the model's device; targets (B, T) i32 (-1 = ignore) or nullptr.
  Output forward(const Tensor& idx, const Tensor* targets, Generator& dropout_gen) const;

  const GPTConfig& config() const { return config_; }
  Device device() const { return at_.device; }
  DType dtype() const { return at_.dtype; }
  // Training FLOPs per token: 6N for the weights plus 12 L C T for attention scores and values.
  double flops_per_token(int T) const;

 private:
  GPTConfig config_;
  Placement at_;
  Variable wte_;
  Variable wpe_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace nd::nn
