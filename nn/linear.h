// Linear: y = x Wᵀ + b, the layer every projection of a block is. The plain layer holds the whole
// weight; a parallel layer (dist/parallel/parallel_linear.h) is a Linear that holds a piece of it
// and communicates in its forward, so the blocks that call it do not change. A block describes each
// of its linears by a LinearSpec, whose role says how a split would cut it.
#pragma once
#include "autograd/ops.h"
#include "nn/init.h"
#include "nn/module.h"

namespace nd::nn {

// Where a linear sits in a block: Expand leads from the residual stream into per-head or per-unit
// features (attention's c_attn, the MLP's c_fc), Project from those features back into the stream
// (the c_proj's). A split cuts an Expand's output features (its weight's rows, its bias) and a
// Project's input features (its weight's columns; its bias stays whole), so the two meet without
// communication between them.
enum class LinearRole { Expand, Project };

struct LinearSpec {
  int64_t in = 0;
  int64_t out = 0;
  bool bias = true;
  double init_std = 0.02;  // weight ~ N(0, init_std); bias = 0
  LinearRole role = LinearRole::Expand;
  int parts = 1;  // the output packs `parts` equal blocks (c_attn: q, k and v), each split on its own

  ShardSpec weight_split() const { return role == LinearRole::Expand ? ShardSpec{0, parts} : ShardSpec{1, 1}; }
  ShardSpec bias_split() const { return role == LinearRole::Expand ? ShardSpec{0, parts} : ShardSpec{}; }
};

class Linear : public Module {
 public:
  // weight (out, in) drawn from `gen`; bias (out) zeros.
  Linear(const LinearSpec& spec, Generator& gen, Placement at);

  // x (..., in) -> (..., out); in FP8 once use_fp8 gave it scalars.
  virtual Variable forward(const Variable& x) const;
  // gelu(forward(x)). A layer that can run the GELU in its own GEMM's epilogue says so with
  // gelu_in_epilogue(); an MLP then calls this rather than a fused op over both of its linears.
  virtual Variable forward_gelu(const Variable& x) const { return ops::gelu(forward(x)); }
  virtual bool gelu_in_epilogue() const { return false; }
  // For a fused op that runs this layer's GEMM itself (ops::gelu_mlp): x as the GEMM reads it, the
  // bias the GEMM adds, and the layer's output from the GEMM's product. A plain layer: x, its
  // bias, the product.
  virtual Variable gemm_input(const Variable& x) const { return x; }
  virtual Variable gemm_bias() const { return bias; }
  virtual Variable output_from_gemm(const Variable& product) const { return product; }
  // The first of the whole layer's output features (in each packed part) that this layer computes:
  // 0 unless it holds a piece of the output.
  virtual int64_t first_output() const { return 0; }

  // Runs the GEMMs in FP8 (ops::fp8_linear) with these device scalars (nn/fp8_linear_scaling.h).
  void use_fp8(Tensor scalars) { fp8_scalars_ = std::move(scalars); }
  bool fp8() const { return fp8_scalars_.defined(); }
  const Tensor& fp8_scalars() const { return fp8_scalars_; }  // for a fused op (ops::fp8_gelu_mlp)

  const LinearSpec& spec() const { return spec_; }

  Variable weight;
  Variable bias;  // undefined without bias

 protected:
  // A layer holding piece `shards` of its weight and bias (as LinearSpec's splits cut them), drawn
  // by the caller.
  Linear(const LinearSpec& spec, Tensor weight, Tensor bias, int shards);

 private:
  LinearSpec spec_;
  Tensor fp8_scalars_;  // FP8 GEMMs when defined
};

}  // namespace nd::nn
