// Tensor-core attention (see attention_mma.cuh). Not built yet: every case goes to the simple kernels.
#include "kernels/cuda/attention_mma.cuh"
#include "tensor/error.h"

namespace nd::cuda::detail {

bool attention_mma_supports(int64_t) { return false; }

void attention_forward_mma(const nd::bf16*, nd::bf16*, float*, int64_t, int64_t, int64_t, int64_t, cudaStream_t) {
  ND_FAIL("attention_forward_mma: not built");
}

void attention_backward_mma(const nd::bf16*, const nd::bf16*, const float*, const float*, nd::bf16*, int64_t,
                            int64_t, int64_t, int64_t, cudaStream_t) {
  ND_FAIL("attention_backward_mma: not built");
}

}  // namespace nd::cuda::detail
