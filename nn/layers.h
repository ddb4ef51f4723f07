// The building blocks of a GPT: LayerNorm (or identity, for the no-LayerNorm ablation), causal
// self-attention and the 4x GELU MLP. Their linears and dropouts come from a LayerBuilder (plain by
// default, nn/layer_builder.h); each draws its initial weights from the generator it is given, in a
// fixed order, on its device (nn/init.h), so one seed gives one model whatever the builder.
#pragma once
#include "autograd/ops.h"
#include "nn/init.h"
#include "nn/layer_builder.h"
#include "nn/module.h"

namespace nd::nn {

class LayerNorm : public Module {
 public:
  // enabled = false makes this the identity with no parameters (the ablation switch).
  LayerNorm(int64_t dim, bool bias, bool enabled, Placement at);
  Variable forward(const Variable& x) const;

  Variable weight;
  Variable bias;

 private:
  bool enabled_;
};

// Activation recomputation (--recompute): what backward reruns instead of autograd keeping it.
// Attention: each block's attention core (ops::attention: its output and row statistics); Block:
// all of each block but its input. A choice of memory against compute, not part of the model.
enum class Recompute { None, Attention, Block };

struct BlockShape {
  int64_t n_embd;
  int n_head;
  int n_layer;  // scales the residual projections' initialisation
  bool bias;
  float dropout;
  ops::AttentionKernel attention = ops::AttentionKernel::Ours;  // how attention is computed, not the model
  Recompute recompute = Recompute::None;                          // nor is this
};

// Input and output (B, T, C), or whatever share of the tokens the builder's layers keep between
// them (sequence parallelism). The heads are split by head: c_attn's output packs q, k and v, and a
// c_attn that computes a range of the heads gives the attention core only those.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const BlockShape& shape, Generator& gen, Placement at,
                      const LayerBuilder& layers = plain_layers());
  // x (B, T, C) -> (B, T, C). With Recompute::Attention the attention core is an ops::checkpoint.
  Variable forward(const Variable& x, Generator& dropout_gen) const;
  Linear& c_attn() const { return *c_attn_; }
  Linear& c_proj() const { return *c_proj_; }

 private:
  Variable attention_core(const Variable& qkv, Generator& dropout_gen) const;

  BlockShape shape_;
  std::shared_ptr<Linear> c_attn_;
  std::shared_ptr<Linear> c_proj_;
  std::shared_ptr<const Dropout> dropout_;
};

class MLP : public Module {
 public:
  MLP(const BlockShape& shape, Generator& gen, Placement at, const LayerBuilder& layers = plain_layers());
  // x (B, T, C) -> (B, T, C). c_fc, GELU and c_proj run as one ops::gelu_mlp (ops::fp8_gelu_mlp
  // when both linears are FP8); a c_fc with the GELU in its epilogue (sequence parallel) runs as that.
  // With output_read false (a recomputed block's rerun, whose backward needs the graph but no value
  // of the output) c_proj, its collective and the dropout are recorded without their forward
  // (autograd/without_forward.h): the result has no value.
  Variable forward(const Variable& x, Generator& dropout_gen, bool output_read = true) const;
  Linear& c_fc() const { return *c_fc_; }
  Linear& c_proj() const { return *c_proj_; }

 private:
  // c_proj(gelu(c_fc(x))) by ops::gelu_mlp over the layers' GEMM inputs, bias and outputs
  // (Linear::gemm_input). skip_output: c_proj on without its forward.
  Variable fused_forward(const Variable& x, bool skip_output) const;

  float dropout_p_;
  std::shared_ptr<Linear> c_fc_;
  std::shared_ptr<Linear> c_proj_;
  std::shared_ptr<const Dropout> dropout_;
};

// GPT-2's standard deviation for the projections that write into the residual stream.
double residual_projection_std(int n_layer);

}  // namespace nd::nn
