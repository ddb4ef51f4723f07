// Fused causal self-attention on the GPU in the flash-attention style: no (T, T) matrix in device
// memory; an online softmax in the forward, which saves only the output and each row's log-sum-exp;
// the backward recomputes the probabilities tile by tile. bf16 with head size 64 or 128 runs on
// tensor cores (mma.sync, f32 accumulation); other cases run a simple f32-math kernel. Dropout on
// the probabilities draws its mask inside the kernels (kernels/attention_dropout.h), stores none.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// Head sizes the kernels take: multiples of 8 up to this.
constexpr int64_t kMaxAttentionHeadSize = 128;

// As cpu::attention_forward (kernels/cpu/attention.h, the reference); lse in f32.
template <typename T>
void attention_forward(const T* qkv, T* out, StatType<T>* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout = {}, cudaStream_t stream = nullptr);

// As cpu::attention_backward. Deterministic.
template <typename T>
void attention_backward(const T* dout, const T* qkv, const T* out, const StatType<T>* lse, GradDest<T> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout = {},
                        cudaStream_t stream = nullptr);

}  // namespace nd::cuda
