#include "nn/layers.h"

#include <cmath>

#include "autograd/checkpoint.h"
#include "autograd/ops/fp8_gelu_mlp.h"
#include "autograd/without_forward.h"
#include "dist/parallel/sequence_parallel.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/parallel_linear.h"

namespace nd::nn {

namespace {
constexpr double kInitStd = 0.02;
}

double residual_projection_std(int n_layer) { return kInitStd / std::sqrt(2.0 * n_layer); }

Linear::Linear(int64_t in, int64_t out, bool has_bias, double init_std, Generator& gen, Placement at) {
  weight = register_parameter("weight", normal_shard({out, in}, 0.0, init_std, gen, at));
  if (has_bias) bias = register_parameter("bias", Tensor::zeros({out}, at.dtype, at.device));
}

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

void check_tensor_parallel_shape(int64_t n_embd, int n_head, int tp) {
  ND_CHECK(tp >= 1, "tensor-parallel size must be at least 1, got " << tp);
  ND_CHECK(n_head % tp == 0, "tensor-parallel size " << tp << " does not divide n_head " << n_head);
  ND_CHECK(n_embd % tp == 0, "tensor-parallel size " << tp << " does not divide n_embd " << n_embd);
}

CausalSelfAttention::CausalSelfAttention(const BlockShape& shape, Generator& gen, Placement at,
                                         const dist::TensorParallel& tp)
    : shape_(shape), tp_(tp) {
  ND_CHECK(shape.n_embd % shape.n_head == 0,
           "n_embd " << shape.n_embd << " is not divisible by n_head " << shape.n_head);
  check_tensor_parallel_shape(shape.n_embd, shape.n_head, tp.size());
  // q, k and v are split by head each: this rank's qkv is [q heads; k heads; v heads] of its own,
  // the packed layout ops::attention reads, with no copy.
  c_attn_ = register_module("c_attn", std::make_shared<ColumnParallelLinear>(shape.n_embd, 3 * shape.n_embd,
                                                                              shape.bias, kInitStd, gen, at, tp, 3));
  c_proj_ = register_module("c_proj",
                            std::make_shared<RowParallelLinear>(shape.n_embd, shape.n_embd, shape.bias,
                                                                residual_projection_std(shape.n_layer), gen, at, tp));
}

Variable CausalSelfAttention::forward(const Variable& x, Generator& dropout_gen) const {
  Variable qkv = c_attn_->forward(x);
  // Recomputed, the core keeps only qkv: its output lives on as c_proj's saved input anyway, so
  // what is freed is the row statistics (B, heads, T) (docs/DESIGN.md, activation recomputation).
  Variable y = shape_.recompute == Recompute::Attention
                   ? ops::checkpoint([this](const Variable& in, Generator& gen) { return attention_core(in, gen); },
                                     qkv, {}, dropout_gen)
                   : attention_core(qkv, dropout_gen);
  return dist::token_dropout(c_proj_->forward(y), shape_.dropout, dropout_gen, training(), tp_);
}

Variable CausalSelfAttention::attention_core(const Variable& qkv, Generator& dropout_gen) const {
  // nanoGPT's attn_dropout on the probabilities (its resid_dropout follows the projection). Under
  // tp each local head drops what its global head drops at tp = 1.
  const int local_heads = shape_.n_head / tp_.size();
  return tp_.active() ? ops::attention(qkv, local_heads, shape_.dropout, &dropout_gen, training(),
                                       tp_.rank() * local_heads, shape_.n_head, shape_.attention)
                      : ops::attention(qkv, shape_.n_head, shape_.dropout, &dropout_gen, training(), 0, 0,
                                       shape_.attention);
}

void CausalSelfAttention::use_fp8(Fp8LinearScaling& scaling, const std::string& prefix) {
  c_attn_->use_fp8(scaling.add(prefix + ".c_attn", {}));
  c_proj_->use_fp8(scaling.add(prefix + ".c_proj", {}));
}

MLP::MLP(const BlockShape& shape, Generator& gen, Placement at, const dist::TensorParallel& tp)
    : dropout_(shape.dropout), tp_(tp) {
  check_tensor_parallel_shape(shape.n_embd, shape.n_head, tp.size());
  c_fc_ = register_module("c_fc", std::make_shared<ColumnParallelLinear>(shape.n_embd, 4 * shape.n_embd, shape.bias,
                                                                          kInitStd, gen, at, tp));
  c_proj_ = register_module("c_proj",
                            std::make_shared<RowParallelLinear>(4 * shape.n_embd, shape.n_embd, shape.bias,
                                                                residual_projection_std(shape.n_layer), gen, at, tp));
}

Variable MLP::forward(const Variable& x, Generator& dropout_gen, bool output_read) const {
  // Unread, everything from c_proj on (its product, bias, collective and the dropout) is recorded
  // without its forward; what comes before it runs as always, for the tensors backward reads.
  const bool skip = !output_read;
  Variable y;
  if (tp_.splits_tokens()) {
    // The split linears, whose collectives overlap the GEMMs; c_fc with the GELU in its epilogue.
    Variable g = dist::gathered_column_linear(x, c_fc_->weight, c_fc_->bias, tp_, true);
    WithoutForward tail(skip);
    y = c_proj_->forward(g);
  } else if (c_fc_->fp8() && c_proj_->fp8() && !tp_.active()) {
    // Both linears in FP8: the GELU and its gradient inside the FP8 quantises.
    WithoutForward tail(skip);
    y = ops::fp8_gelu_mlp(x, c_fc_->weight, c_fc_->bias, c_fc_->fp8_scalars(), c_proj_->weight, c_proj_->bias,
                          c_proj_->fp8_scalars());
  } else if (!c_fc_->fp8() && !c_proj_->fp8()) {
    y = fused_forward(x, skip);
  } else {  // each linear in its own precision: the bf16 gelu_mlp would drop an FP8 one's quantising
    Variable g = ops::gelu(c_fc_->forward(x));
    WithoutForward tail(skip);
    y = c_proj_->forward(g);
  }
  WithoutForward tail(skip);
  return dist::token_dropout(y, dropout_, dropout_gen, training(), tp_);
}

void MLP::use_fp8(Fp8LinearScaling& scaling, const std::string& prefix, bool fc, bool proj) {
  if (fc) c_fc_->use_fp8(scaling.add(prefix + ".c_fc", {}));
  if (proj) c_proj_->use_fp8(scaling.add(prefix + ".c_proj", {}));
}

Variable MLP::fused_forward(const Variable& x, bool skip_output) const {
  Variable in = dist::enter_tp_region(x, tp_);
  WithoutForward tail(skip_output);  // gelu_mlp then runs c_fc and the GELU only
  if (!tp_.active()) return ops::gelu_mlp(in, c_fc_->weight, c_fc_->bias, c_proj_->weight, c_proj_->bias);
  return c_proj_->reduce_partial(
      ops::gelu_mlp(in, c_fc_->weight, c_fc_->bias, c_proj_->weight, c_proj_->rank_bias()));
}

}  // namespace nd::nn
