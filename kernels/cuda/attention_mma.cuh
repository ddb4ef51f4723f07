// Tensor-core attention kernels for bf16 (mma.sync m16n8k16, f32 accumulation), FlashAttention-2
// tiling: the forward and dq kernels walk key tiles for 64 query rows (16 per warp), the dk/dv
// kernel walks query tiles for 64 key rows. Head sizes 64 and 128. attention_mma_tiles.cuh holds
// the shared tile helpers.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/attention_dropout.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda::detail {

bool attention_mma_supports(int64_t head_size);

// Tiling variants of the forward kernel (the `variant` argument), for tests and the benchmark:
// 0 (default, what attention_forward runs) = 4 warps of 16 rows, 1 = 4 warps of 32 rows,
// 2 = 8 warps of 16 rows.
int attention_forward_variant_count();

void attention_forward_mma(const nd::bf16* qkv, nd::bf16* out, float* lse, int64_t B, int64_t T_len, int64_t C,
                           int64_t NH, const AttentionDropout& dropout, cudaStream_t stream, int variant = 0);

void attention_backward_mma(const nd::bf16* dout, const nd::bf16* qkv, const float* lse, const float* delta,
                            GradDest<nd::bf16> dqkv, int64_t B, int64_t T_len, int64_t C, int64_t NH,
                            const AttentionDropout& dropout, cudaStream_t stream);

}  // namespace nd::cuda::detail
