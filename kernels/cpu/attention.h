// CPU reference for causal multi-head self-attention with a fused softmax. The forward pass keeps
// the attention probabilities so that backward needs no recomputation (the CUDA version recomputes).
#pragma once
#include <cstdint>

namespace nd::cpu {

// qkv (B, T, 3C): q, k, v packed along the last dimension; head h of q is columns
// [h*hs, (h+1)*hs) of the q part, hs = C / NH (likewise for k and v).
// out (B, T, C): per head softmax(q kᵀ / sqrt(hs), causal) v, heads concatenated in the same layout.
// probs (B, NH, T, T): the softmax probabilities, zero above the diagonal; saved for backward.
// Float is float or double (T names the sequence length here).
template <typename Float>
void attention_forward(const Float* qkv, Float* out, Float* probs, int64_t B, int64_t T, int64_t C, int64_t NH);

// dout (B, T, C), qkv (B, T, 3C), probs (B, NH, T, T) from the forward pass -> dqkv (B, T, 3C) +=
// (null: nothing to do).
template <typename Float>
void attention_backward(const Float* dout, const Float* qkv, const Float* probs, Float* dqkv, int64_t B, int64_t T,
                        int64_t C, int64_t NH);

}  // namespace nd::cpu
