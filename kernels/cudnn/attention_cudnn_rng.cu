// One thread writes the (seed, offset) pair of a cuDNN attention call with dropout.
#include "kernels/cudnn/attention_cudnn_rng.h"
#include "tensor/cuda_check.h"

namespace nd::cudnn {

namespace {
__global__ void write_pair_kernel(int64_t* dst, int64_t seed, const uint64_t* anchor, int64_t first) {
  dst[0] = seed;
  dst[1] = first + (anchor ? static_cast<int64_t>(*anchor) : 0);
}
}  // namespace

void write_philox_seed_offset(int64_t* dst, int64_t seed, const uint64_t* anchor, int64_t first,
                              cudaStream_t stream) {
  write_pair_kernel<<<1, 1, 0, stream>>>(dst, seed, anchor, first);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace nd::cudnn
