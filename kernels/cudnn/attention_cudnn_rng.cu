// One thread writes the (seed, offset) pair of a cuDNN attention call with dropout.
#include "kernels/cudnn/attention_cudnn_rng.h"
#include "tensor/cuda_check.h"

namespace nd::cudnn {

namespace {
__global__ void write_pair_kernel(int64_t* dst, int64_t a, int64_t b) {
  dst[0] = a;
  dst[1] = b;
}
}  // namespace

void write_philox_seed_offset(int64_t* dst, int64_t seed, int64_t offset, cudaStream_t stream) {
  write_pair_kernel<<<1, 1, 0, stream>>>(dst, seed, offset);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace nd::cudnn
