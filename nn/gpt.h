// GPT: token + position embedding, n_layer pre-norm blocks, a final LayerNorm, and an output head
// tied to the token embedding. Two ablation switches: use_layernorm (off: identity in place of
// every LayerNorm) and use_residual (off: each sublayer's output replaces x instead of adding).
// The model knows no parallelism: its linears, token embedding (with the tied head and the loss)
// and dropouts come from a LayerBuilder (nn/layer_builder.h), plain by default; a parallel plan
// (dist/parallel/parallelize.h) builds it with layers that hold pieces of the weights and
// communicate inside their forward. Every parameter keeps its nanoGPT name and carries its
// ParamInfo (how it splits, which block holds it, whether it is the tied embedding). A pipeline
// stage (GPTStage) is a part of the model: some of its blocks, with or without the embeddings and
// the head.
#pragma once
#include "nn/block_hooks.h"
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
  // The attention kernel (ops::attention): a choice of implementation, not part of the model's
  // shape, so checkpoints do not record it here and check_same_model ignores it.
  ops::AttentionKernel attention = ops::AttentionKernel::Ours;
  // Activation recomputation (nn/layers.h): likewise a trade of compute for memory, not the model.
  Recompute recompute = Recompute::None;

  int vocab_rows() const { return padded_vocab_size > 0 ? padded_vocab_size : vocab_size; }
  // nd::Error naming the bad field, as a field (n_embd) or as the train flag (--n-embd).
  enum class FieldNames { Fields, Flags };
  void validate(FieldNames names = FieldNames::Fields) const;
};

// The padded_vocab_size for a run: like Megatron, a multiple of 128 x tp on the GPU (so each of
// the tp ranks holds a multiple of 128 rows) and on the CPU when tp > 1; the vocabulary itself on
// the CPU at tp = 1.
int padded_vocab_rows(int vocab_size, int tp, bool on_cuda);

class Block;

// What a block shows an observer in its forward (the per-layer statistics, train/layer_stats.h):
// each tensor (B, T, C), or the share of the tokens the layers keep between them (sequence
// parallelism), and the block itself, whose linears the observer may apply again.
struct BlockActivations {
  int layer;            // the block's global index
  const Block& block;
  const Tensor& ln_1;   // attention input (ln_1's output)
  const Tensor& attn;   // attention output (after c_proj and dropout)
  const Tensor& ln_2;   // MLP input (ln_2's output)
  const Tensor& mlp;    // MLP output
  const Tensor& output; // the residual stream after the block
};
class BlockObserver {
 public:
  virtual ~BlockObserver() = default;
  virtual void on_block(const BlockActivations& a) = 0;
};

class Block : public Module {
 public:
  // Block `layer` (its global index, every parameter's ParamInfo::block).
  Block(const GPTConfig& config, Generator& gen, Placement at, int layer = 0,
        const LayerBuilder& layers = plain_layers());
  // With Recompute::Block the block is an ops::checkpoint: only x is kept for backward, and the
  // rerun skips the work whose values backward does not read (the MLP's c_proj on, the residual add).
  Variable forward(const Variable& x, Generator& dropout_gen) const;
  void set_observer(BlockObserver* observer) { observer_ = observer; }
  CausalSelfAttention& attention() const { return *attn_; }
  MLP& mlp() const { return *mlp_; }
  int layer() const { return layer_; }  // the global index

 private:
  // output_read false: ops::checkpoint's rerun, which skips the block's tail (MLP::forward).
  Variable run(const Variable& x, Generator& dropout_gen, bool output_read) const;

  bool use_residual_;
  bool recompute_;
  int layer_;
  BlockObserver* observer_ = nullptr;
  std::shared_ptr<LayerNorm> ln_1_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<LayerNorm> ln_2_;
  std::shared_ptr<MLP> mlp_;
};

// A pipeline stage's share of the model: blocks [first_block, end_block) (end_block -1: to the
// last), the embeddings (wte, wpe) when it starts at block 0, and the final LayerNorm with the tied
// head when it ends at the last block; a last stage that is not also the first holds its own copy
// of wte for the head (as Megatron's), whose gradient the pipeline sums with the first stage's over
// the grid's embedding group. Every stage draws exactly the weights the whole model would give
// those parameters (the generator advances past the others), and blocks keep their global names
// and indices. The default is the whole model.
// Under an interleaved pipeline a rank holds several ranges (chunks): `chunks` lists them in
// order, [first, end) each, and replaces first_block/end_block; blocks() then takes local indices
// (the chunks' blocks one after another).
struct GPTStage {
  int first_block = 0;
  int end_block = -1;
  std::vector<std::pair<int, int>> chunks;
};

class GPT : public Module {
 public:
  // The layers come from `layers`; every builder draws the same full tensors from an init_gen of
  // the same seed.
  GPT(const GPTConfig& config, Generator& init_gen, Device device = Device::cpu(), DType dtype = DType::F32,
      const GPTStage& stage = {}, const LayerBuilder& layers = plain_layers());

  bool is_first_stage() const { return first_block_ == 0; }
  bool is_last_stage() const { return last_end_ == config_.n_layer; }

  struct Output {
    // (B, T, vocab_rows), or the columns of the vocabulary the head holds; undefined when the
    // loss_gradient asked for the logits to be overwritten by their gradient.
    Variable logits;
    Variable loss;    // scalar mean cross-entropy, the same on every rank; undefined without targets
  };
  // The whole model, one stage: head(blocks(embed(idx))). idx (B, T) i32 on the model's device;
  // targets (B, T) i32 (-1 = ignore) or nullptr. loss_gradient (with targets only; null = none):
  // the loss's backward seed, told in advance so that the loss writes the logits' gradient in its
  // forward (TokenEmbedding::loss with a LossGradient). With overwrite_logits the gradient may be
  // written over the logits and Output::logits is undefined.
  Output forward(const Tensor& idx, const Tensor* targets, Generator& dropout_gen,
                 const ops::LossGradient* loss_gradient = nullptr) const;

  // The stages of the forward. A pipeline stage runs embed on the first stage, blocks on its range
  // of blocks, and head on the last; each takes and returns the hidden state (B, T, C), or the
  // share of the tokens the layers keep between them.
  // Token + position embedding and dropout.
  Variable embed(const Tensor& idx, Generator& dropout_gen) const;
  // Blocks [first, last) of this stage's blocks (last = -1: to its end).
  Variable blocks(Variable x, Generator& dropout_gen, int first = 0, int last = -1) const;
  // Final LayerNorm, the tied head and, with targets, the loss.
  Output head(const Variable& x, const Tensor* targets, const ops::LossGradient* loss_gradient = nullptr) const;

  const GPTConfig& config() const { return config_; }
  Device device() const { return at_.device; }
  DType dtype() const { return at_.dtype; }
  // Training FLOPs per token of the whole (unsplit) model: 6N for the weights plus 12 L C T for
  // attention scores and values. A model of pieces does 1 / shards of them on each rank.
  double flops_per_token(int T) const;
  // Every block of this stage reports its activations to `observer` in forward (nullptr: none).
  void set_block_observer(BlockObserver* observer);
  // Every block of this stage calls `hooks` with its global index (nullptr: none): before and after
  // its forward, and from backward before its backward.
  void set_block_hooks(BlockHooks* hooks) { block_hooks_ = hooks; }
  int first_block() const { return first_block_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Block& block(int i) const { return *blocks_.at(static_cast<size_t>(i)); }  // of this stage's, local index
  // The token embedding with the tied head: null on a stage with neither.
  TokenEmbedding* token_embedding() const { return wte_.get(); }

 private:
  GPTConfig config_;
  Placement at_;
  int first_block_ = 0;  // the global index of blocks_[0]
  int last_end_ = 0;     // one past the global index of the last block
  std::shared_ptr<TokenEmbedding> wte_;
  Variable wpe_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<const Dropout> dropout_;
  BlockHooks* block_hooks_ = nullptr;
};

}  // namespace nd::nn
