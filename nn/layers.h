// The building blocks of a GPT: Linear, LayerNorm (or identity, for the no-LayerNorm ablation),
// causal self-attention and the 4x GELU MLP. Each draws its initial weights from the generator
// it is given, in a fixed order, on its device (nn/init.h), so one seed gives one model.
#pragma once
#include "autograd/ops.h"
#include "dist/parallel/tp_mappings.h"
#include "nn/init.h"
#include "nn/module.h"

namespace nd::nn {

class Fp8LinearScaling;

class Linear : public Module {
 public:
  // weight (out, in) ~ N(0, init_std); bias (out) = 0.
  Linear(int64_t in, int64_t out, bool bias, double init_std, Generator& gen, Placement at);
  Variable forward(const Variable& x) const { return ops::linear(x, weight, bias); }

  Variable weight;
  Variable bias;  // undefined without bias
};

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

class ColumnParallelLinear;
class RowParallelLinear;

// Attention and MLP take a tensor-parallel group (default: none, tp = 1). Under tp the attention
// keeps n_head / tp heads (c_attn column-parallel with q, k and v each split by head, c_proj
// row-parallel) and the MLP a quarter-width slice (c_fc column-, c_proj row-parallel); input and
// output are the full (B, T, C) on every rank, or this rank's share of the tokens (B, T / tp, C)
// when tp splits tokens (sequence parallelism, dist/parallel/sequence_parallel.h). A tp that does not divide n_head and n_embd is an nd::Error
// naming the numbers.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const BlockShape& shape, Generator& gen, Placement at, const dist::TensorParallel& tp = {});
  // x (B, T, C) -> (B, T, C). With Recompute::Attention the attention core is an ops::checkpoint.
  Variable forward(const Variable& x, Generator& dropout_gen) const;
  // c_attn and c_proj in FP8, registered with `scaling` as PREFIX.c_attn and PREFIX.c_proj.
  void use_fp8(Fp8LinearScaling& scaling, const std::string& prefix);

 private:
  Variable attention_core(const Variable& qkv, Generator& dropout_gen) const;

  BlockShape shape_;
  dist::TensorParallel tp_;
  std::shared_ptr<ColumnParallelLinear> c_attn_;
  std::shared_ptr<RowParallelLinear> c_proj_;
};

class MLP : public Module {
 public:
  MLP(const BlockShape& shape, Generator& gen, Placement at, const dist::TensorParallel& tp = {});
  // x (B, T, C) -> (B, T, C). c_fc, GELU and c_proj run as one ops::gelu_mlp (under sequence
  // parallelism c_fc's GEMM takes the GELU in its epilogue). With
  // output_read false (a recomputed block's rerun, whose backward needs the graph but no value of
  // the output) c_proj, its collective and the dropout are recorded without their forward
  // (autograd/without_forward.h): the result has no value.
  Variable forward(const Variable& x, Generator& dropout_gen, bool output_read = true) const;
  // c_fc and c_proj in FP8, as CausalSelfAttention's, or one of them (`fc`, `proj`). Both: the
  // MLP runs as ops::fp8_gelu_mlp; one: separate linears, each in its own precision.
  void use_fp8(Fp8LinearScaling& scaling, const std::string& prefix, bool fc = true, bool proj = true);

 private:
  // c_proj(gelu(c_fc(x))) by ops::gelu_mlp: under tp each rank's op gives c_proj's partial product
  // and the bias comes once, after the all-reduce. skip_output: c_proj on without its forward.
  Variable fused_forward(const Variable& x, bool skip_output) const;

  float dropout_;
  dist::TensorParallel tp_;
  std::shared_ptr<ColumnParallelLinear> c_fc_;
  std::shared_ptr<RowParallelLinear> c_proj_;
};

// Raises nd::Error unless tp divides n_head and n_embd, naming the numbers.
void check_tensor_parallel_shape(int64_t n_embd, int n_head, int tp);

// GPT-2's standard deviation for the projections that write into the residual stream.
double residual_projection_std(int n_layer);

}  // namespace nd::nn
