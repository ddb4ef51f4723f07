// CPU reference for causal multi-head self-attention with a fused softmax and optional dropout on
// the probabilities. The forward saves each row's log-sum-exp, from which the backward recomputes
// the probabilities (as the CUDA version does); the dropout mask is redrawn from Philox.
#pragma once
#include <cstdint>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"

namespace nd::cpu {

// qkv (B, T, 3C): q, k, v packed along the last dimension; head h of q is columns
// [h*hs, (h+1)*hs) of the q part, hs = C / NH (likewise for k and v).
// out (B, T, C): per head (P ∘ Z / (1 - p)) v, heads concatenated in the same layout, where
// P = softmax(q kᵀ / sqrt(hs), causal) and Z the keep mask of `dropout` (all ones when inactive).
// lse (B, NH, T): log sum_j exp(q·k_j / sqrt(hs)) over the row's keys (undropped); backward reads it.
// Float is float or double (T names the sequence length here).
template <typename Float>
void attention_forward(const Float* qkv, Float* out, StatType<Float>* lse, int64_t B, int64_t T, int64_t C,
                       int64_t NH, const AttentionDropout& dropout = {});

// dout (B, T, C), qkv (B, T, 3C), out and lse from the forward pass and the forward's `dropout`
// -> dqkv (B, T, 3C) (+)=.
template <typename Float>
void attention_backward(const Float* dout, const Float* qkv, const Float* out, const StatType<Float>* lse,
                        GradDest<Float> dqkv, int64_t B, int64_t T, int64_t C, int64_t NH,
                        const AttentionDropout& dropout = {});

}  // namespace nd::cpu
