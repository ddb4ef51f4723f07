// cuDNN's fused (flash) causal attention, beside our own kernel (kernels/cuda/attention.h) with the
// same arguments and the same saved statistics: qkv packed (B, T, 3C) is read through strided views,
// no copies. bf16 or f16 (the graph's io type), statistics and math in f32. Declared in every
// build; a build without cuDNN (cmake/NanodistCudnn.cmake) links
// kernels/cudnn/attention_cudnn_none.cpp, whose launchers raise nd::Error.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>
#include <string>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cudnn {

// True when this build has cuDNN attention and the current GPU can run it (compute capability
// 8.0 or newer); else false with the reason in `why` (when not null).
bool attention_available(std::string* why = nullptr);

// qkv (B, T, 3C) -> out (B, T, C) = dropout(P) v per head, P the causal softmax of q kᵀ / sqrt(hs);
// lse (B, NH, T) f32 = log sum_j exp(q·k_j / sqrt(hs)), as our kernel saves it. Dropout draws from
// cuDNN's own Philox stream keyed by (dropout.seed, dropout.stream, dropout.first_head) at offset
// dropout.first, so its masks are not those of our kernel. The built cuDNN graph is cached per
// (device, B, T, NH, hs, dropout p): a later call with that shape builds nothing.
void attention_forward(const bf16* qkv, bf16* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout = {}, cudaStream_t stream = nullptr);
void attention_forward(const f16* qkv, f16* out, float* lse, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                       const AttentionDropout& dropout = {}, cudaStream_t stream = nullptr);

// dout (B, T, C), qkv, out, lse and dropout of the forward -> dqkv (B, T, 3C) (+)=. Deterministic
// where this cuDNN offers a deterministic backward for the shape, else cuDNN's default.
void attention_backward(const bf16* dout, const bf16* qkv, const bf16* out, const float* lse, GradDest<bf16> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout = {},
                        cudaStream_t stream = nullptr);
void attention_backward(const f16* dout, const f16* qkv, const f16* out, const float* lse, GradDest<f16> dqkv,
                        int64_t B, int64_t T_len, int64_t C, int64_t NH, const AttentionDropout& dropout = {},
                        cudaStream_t stream = nullptr);

}  // namespace nd::cudnn
