// The building blocks of a GPT: Linear, LayerNorm (or identity, for the no-LayerNorm ablation),
// causal self-attention and the 4x GELU MLP. Each draws its initial weights from the generator
// it is given, in a fixed order, so one seed gives one model on every device.
#pragma once
#include "autograd/ops.h"
#include "nn/module.h"

namespace nd::nn {

// Where parameters live and which dtype they have.
struct Placement {
  Device device = Device::cpu();
  DType dtype = DType::F32;
};

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

struct BlockShape {
  int64_t n_embd;
  int n_head;
  int n_layer;  // scales the residual projections' initialisation
  bool bias;
  float dropout;
};

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const BlockShape& shape, Generator& gen, Placement at);
  // x (B, T, C) -> (B, T, C)
  Variable forward(const Variable& x, Generator& dropout_gen) const;

 private:
  BlockShape shape_;
  std::shared_ptr<Linear> c_attn_;
  std::shared_ptr<Linear> c_proj_;
};

class MLP : public Module {
 public:
  MLP(const BlockShape& shape, Generator& gen, Placement at);
  // x (B, T, C) -> (B, T, C)
  Variable forward(const Variable& x, Generator& dropout_gen) const;

 private:
  float dropout_;
  std::shared_ptr<Linear> c_fc_;
  std::shared_ptr<Linear> c_proj_;
};

// GPT-2's standard deviation for the projections that write into the residual stream.
double residual_projection_std(int n_layer);

}  // namespace nd::nn
