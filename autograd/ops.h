// The differentiable ops of a transformer, as coarse fused units (DESIGN.md). Each op checks its
// inputs (shape, dtype, device; messages name the shapes), runs the forward kernel of the
// inputs' device, and records a backward closure that contributes to the inputs' gradients
// (Variable::grad_slot). Implementations: autograd/ops/<op>.cpp, each kernel call written once
// for both backends (autograd/dispatch.h) to kernels/cpu/<op>.* and kernels/cuda/<op>.*.
#pragma once
#include <cstdint>

#include "autograd/variable.h"
#include "tensor/random.h"

namespace nd::ops {

// x (..., K), w (N, K), b (N) or undefined -> x · wᵀ + b, shape (..., N).
Variable linear(const Variable& x, const Variable& w, const Variable& b);

// idx (B, T) i32 token ids in [0, V); wte (V, C); wpe (Tmax, C) with T <= Tmax -> (B, T, C):
// out[b, t] = wte[idx[b, t]] + wpe[t]. An id outside [0, V) is an nd::Error: at once on the CPU;
// on the GPU at the next check_recorded_token_ids (meanwhile that position embeds as wpe[t]).
Variable embedding(const Tensor& idx, const Variable& wte, const Variable& wpe);

// x (..., C), w (C), b (C) -> normalised over the last dimension, times w, plus b.
Variable layernorm(const Variable& x, const Variable& w, const Variable& b, float eps = 1e-5f);

// GPT-2's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Variable gelu(const Variable& x);

// The MLP's two linears around GELU as one op: x (..., K), fc_w (H, K), fc_b (H) or undefined,
// proj_w (N, H), proj_b (N) or undefined -> linear(gelu(linear(x, fc_w, fc_b)), proj_w, proj_b),
// shape (..., N). On the GPU the GELU runs in the fc GEMM's epilogue and its gradient in the
// epilogue of proj's input-gradient GEMM (cuBLASLt), with separate kernels where cuBLASLt has no
// such epilogue; on the CPU it is those three ops' kernels in a row.
Variable gelu_mlp(const Variable& x, const Variable& fc_w, const Variable& fc_b, const Variable& proj_w,
                  const Variable& proj_b);

// qkv (B, T, 3C) with q, k, v packed along the last dimension, each split into n_head heads of
// C / n_head -> (B, T, C): causal dropout(softmax(q kᵀ / sqrt(hs))) v per head, heads concatenated.
// The dropout on the probabilities (B, n_head, T, T) is inverted dropout with p = `dropout` and
// the Philox rule of ops::dropout over B * n_head * T * T counters reserved from `gen` (element
// (b, h, i, j) uses counter first + ((b * n_head + h) * T + i) * T + j), so CPU and CUDA drop the
// same probabilities. No dropout and no draw when !training, dropout == 0 or gen is null.
// Tensor parallelism: with total_heads > 0 the n_head heads of qkv are heads [first_head,
// first_head + n_head) of a model with total_heads; the draw reserves the counters of all
// total_heads and each head drops what it drops in the unsplit model.
// `kernel` picks the implementation on the GPU: ours (kernels/cuda/attention.h, the default and the
// only one on the CPU) or cuDNN's fused attention (kernels/cudnn/attention_cudnn.h: bf16 or f16 on
// a GPU, an nd::Error otherwise; its dropout masks are cuDNN's own, drawn at the same generator offset).
enum class AttentionKernel { Ours, Cudnn };
Variable attention(const Variable& qkv, int n_head, float dropout = 0.0f, Generator* gen = nullptr,
                   bool training = false, int first_head = 0, int total_heads = 0,
                   AttentionKernel kernel = AttentionKernel::Ours);

// Inverted dropout: keeps each element with probability 1 - p and scales it by 1 / (1 - p).
// The mask is drawn from `gen` by Philox counter, so CPU and CUDA drop the same elements.
// Identity when !training or p == 0.
Variable dropout(const Variable& x, float p, Generator& gen, bool training);
// The same for x, elements [first_element, first_element + x.numel()) of a tensor of whole_numel
// elements: reserves whole_numel counters, as dropout of the whole tensor would, and drops what
// that dropout drops in this slice (sequence parallelism: each rank holds a share of the tokens).
Variable dropout_share(const Variable& x, float p, Generator& gen, bool training, int64_t whole_numel,
                       int64_t first_element);

// a + b, same shapes (the residual connection).
Variable add(const Variable& a, const Variable& b);

// logits (B, T, Vp), targets (B, T) i32 -> scalar mean over targets != -1 of
// -log softmax(logits[b, t, :V])[target], of dtype loss_dtype(logits' dtype): f32 for f32, bf16
// and f16 logits (the kernel's f32 mean, never rounded to the model's dtype). Columns V..Vp-1 are
// padding: they take no probability and get zero gradient. valid_vocab = 0 means V = Vp. A target
// outside [0, V) other than -1 is an nd::Error: at once on the CPU; on the GPU at the next
// check_recorded_token_ids (meanwhile the loss is NaN).
Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab = 0);

// The dtype of a loss over logits of `logits_dtype`, and so of its backward seed: f32, or f64 for
// the f64 reference of the gradient checks.
inline DType loss_dtype(DType logits_dtype) { return logits_dtype == DType::F64 ? DType::F64 : DType::F32; }

// What a loss's backward will be seeded with, told to the loss at forward time so that the forward
// can write the logits' gradient while it reads the logits (the loss-gradient fusion). `seed`: the scalar tensor (shape [], the loss's dtype, loss_dtype, on the
// logits' device) that backward() will be called with, e.g. the trainer's 1 / grad_accum (f32 for a
// bf16 or f16 model too: 1/3 keeps f32's precision, a scale past f16's 65504 stays finite); the
// forward reads its value from memory when it runs (no host sync, CUDA-graph safe), so it must hold
// the same value until that backward. `overwrite_logits`: the gradient is written over the logits themselves (saving a
// (B*T, V) buffer); the caller promises that nothing reads the logits after the loss (a training
// step, not an evaluation nor a caller that keeps the logits): their contents are then unspecified.
struct LossGradient {
  Tensor seed;
  bool overwrite_logits = false;
};

// cross_entropy as above, with the gradient written by the forward. The loss's backward is correct
// for any gradient: seeded with `gradient.seed` itself (the same tensor) it hands the written
// gradient over and makes no pass over the logits; seeded with anything else it recomputes the
// gradient from the logits, or, when they were overwritten, rescales it by grad / seed (a seed
// that was 0 then gives NaN: the gradient is lost). When no gradient is
// recorded (grad mode off, logits not requiring grad), this is cross_entropy and the logits stay.
Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t valid_vocab,
                       const LossGradient& gradient);

// Raises the nd::Error of an out-of-range token id (embedding) or target (cross_entropy) that a GPU
// kernel on `device` met since the last call, naming the op, the id, where it was and the
// vocabulary size. The GPU ops record such ids on the device instead of checking on the host (a
// host sync per op, forbidden in CUDA graph capture): call this where the step's results are read
// back anyway, outside capture. Costs one small device-to-host copy; does nothing on the CPU, whose
// ops raise at once.
void check_recorded_token_ids(Device device);

}  // namespace nd::ops
