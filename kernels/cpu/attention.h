// CPU reference for causal multi-head self-attention with a fused softmax and optional dropout on
// the probabilities. The forward pass keeps the (undropped) probabilities so that backward needs no
// recomputation of the softmax (the CUDA version recomputes); the dropout mask is redrawn from Philox.
#pragma once
#include <cstdint>

#include "kernels/attention_dropout.h"

namespace nd::cpu {

// qkv (B, T, 3C): q, k, v packed along the last dimension; head h of q is columns
// [h*hs, (h+1)*hs) of the q part, hs = C / NH (likewise for k and v).
// out (B, T, C): per head (P ∘ Z / (1 - p)) v, heads concatenated in the same layout, where
// P = softmax(q kᵀ / sqrt(hs), causal) and Z the keep mask of `dropout` (all ones when inactive).
// probs (B, NH, T, T): P, zero above the diagonal, without the dropout; saved for backward.
// Float is float or double (T names the sequence length here).
template <typename Float>
void attention_forward(const Float* qkv, Float* out, Float* probs, int64_t B, int64_t T, int64_t C, int64_t NH,
                       const AttentionDropout& dropout = {});

// dout (B, T, C), qkv (B, T, 3C), probs (B, NH, T, T) from the forward pass and the forward's
// `dropout` -> dqkv (B, T, 3C) += (null: nothing to do).
template <typename Float>
void attention_backward(const Float* dout, const Float* qkv, const Float* probs, Float* dqkv, int64_t B, int64_t T,
                        int64_t C, int64_t NH, const AttentionDropout& dropout = {});

}  // namespace nd::cpu
