#include "nn/layers.h"

#include <cmath>

#include "autograd/checkpoint.h"
#include "autograd/ops/fp8_gelu_mlp.h"
#include "autograd/without_forward.h"

namespace nd::nn {

namespace {
constexpr double kInitStd = 0.02;
}

double residual_projection_std(int n_layer) { return kInitStd / std::sqrt(2.0 * n_layer); }

LayerNorm::LayerNorm(int64_t dim, bool has_bias, bool enabled, Placement at) : enabled_(enabled) {
  if (!enabled) return;
  weight = register_parameter("weight", Tensor::ones({dim}, at.dtype, at.device));
  // LayerNorm without bias is a zero bias that never trains; the op takes a bias, so keep a
  // constant one outside the parameter list.
  bias = has_bias ? register_parameter("bias", Tensor::zeros({dim}, at.dtype, at.device))
                  : Variable(Tensor::zeros({dim}, at.dtype, at.device), false);
}

Variable LayerNorm::forward(const Variable& x) const {
  return enabled_ ? ops::layernorm(x, weight, bias) : x;
}

CausalSelfAttention::CausalSelfAttention(const BlockShape& shape, Generator& gen, Placement at,
                                         const LayerBuilder& layers)
    : shape_(shape) {
  ND_CHECK(shape.n_embd % shape.n_head == 0,
           "n_embd " << shape.n_embd << " is not divisible by n_head " << shape.n_head);
  layers.check(shape);
  // q, k and v are split by head each: a c_attn that keeps some heads gives [q heads; k heads;
  // v heads] of its own, the packed layout ops::attention reads, with no copy.
  c_attn_ = register_module(
      "c_attn", layers.linear({shape.n_embd, 3 * shape.n_embd, shape.bias, kInitStd, LinearRole::Expand, 3}, gen, at));
  c_proj_ = register_module("c_proj", layers.linear({shape.n_embd, shape.n_embd, shape.bias,
                                                     residual_projection_std(shape.n_layer), LinearRole::Project},
                                                    gen, at));
  dropout_ = layers.dropout();
}

Variable CausalSelfAttention::forward(const Variable& x, Generator& dropout_gen) const {
  Variable qkv = c_attn_->forward(x);
  // Recomputed, the core keeps only qkv: its output lives on as c_proj's saved input anyway, so
  // what is freed is the row statistics (B, heads, T) (docs/DESIGN.md, activation recomputation).
  Variable y = shape_.recompute == Recompute::Attention
                   ? ops::checkpoint([this](const Variable& in, Generator& gen) { return attention_core(in, gen); },
                                     qkv, {}, dropout_gen)
                   : attention_core(qkv, dropout_gen);
  return dropout_->forward(c_proj_->forward(y), shape_.dropout, dropout_gen, training());
}

Variable CausalSelfAttention::attention_core(const Variable& qkv, Generator& dropout_gen) const {
  // nanoGPT's attn_dropout on the probabilities (its resid_dropout follows the projection). Of a
  // range of the heads, each drops what it drops in the whole attention.
  const int64_t head_dim = shape_.n_embd / shape_.n_head;
  const int heads = static_cast<int>(c_attn_->weight.shape()[0] / 3 / head_dim);
  if (heads == shape_.n_head)
    return ops::attention(qkv, shape_.n_head, shape_.dropout, &dropout_gen, training(), 0, 0, shape_.attention);
  return ops::attention(qkv, heads, shape_.dropout, &dropout_gen, training(),
                        static_cast<int>(c_attn_->first_output() / head_dim), shape_.n_head, shape_.attention);
}

MLP::MLP(const BlockShape& shape, Generator& gen, Placement at, const LayerBuilder& layers)
    : dropout_p_(shape.dropout) {
  layers.check(shape);
  c_fc_ = register_module(
      "c_fc", layers.linear({shape.n_embd, 4 * shape.n_embd, shape.bias, kInitStd, LinearRole::Expand}, gen, at));
  c_proj_ = register_module("c_proj", layers.linear({4 * shape.n_embd, shape.n_embd, shape.bias,
                                                     residual_projection_std(shape.n_layer), LinearRole::Project},
                                                    gen, at));
  dropout_ = layers.dropout();
}

Variable MLP::forward(const Variable& x, Generator& dropout_gen, bool output_read) const {
  // Unread, everything from c_proj on (its product, bias, collective and the dropout) is recorded
  // without its forward; what comes before it runs as always, for the tensors backward reads.
  const bool skip = !output_read;
  Variable y;
  if (c_fc_->fp8() && c_proj_->fp8()) {
    // Both linears in FP8: the GELU and its gradient inside the FP8 quantises. The GEMMs are the
    // op's, so each linear's seams apply around it, as in fused_forward.
    Variable in = c_fc_->gemm_input(x);
    WithoutForward tail(skip);
    y = c_proj_->output_from_gemm(ops::fp8_gelu_mlp(in, c_fc_->weight, c_fc_->gemm_bias(), c_fc_->fp8_scalars(),
                                                    c_proj_->weight, c_proj_->gemm_bias(), c_proj_->fp8_scalars()));
  } else if (!c_fc_->fp8() && !c_proj_->fp8() && !c_fc_->gelu_in_epilogue()) {
    y = fused_forward(x, skip);
  } else {  // each linear in its own precision: the bf16 gelu_mlp would drop an FP8 one's quantising
    Variable g = c_fc_->forward_gelu(x);
    WithoutForward tail(skip);
    y = c_proj_->forward(g);
  }
  WithoutForward tail(skip);
  return dropout_->forward(y, dropout_p_, dropout_gen, training());
}

Variable MLP::fused_forward(const Variable& x, bool skip_output) const {
  Variable in = c_fc_->gemm_input(x);
  WithoutForward tail(skip_output);  // gelu_mlp then runs c_fc and the GELU only
  return c_proj_->output_from_gemm(
      ops::gelu_mlp(in, c_fc_->weight, c_fc_->gemm_bias(), c_proj_->weight, c_proj_->gemm_bias()));
}

}  // namespace nd::nn
