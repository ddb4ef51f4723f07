// copy_many: a batch of copies per launch, one grid row (blockIdx.y) per copy, 16-byte words where
// both ends and the size allow, else bytes.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/copy_many.h"

#include <algorithm>

namespace nd::cuda {

namespace {

constexpr int kBatch = 128;  // 128 x 24 bytes of descriptors: under the 4 KiB of kernel arguments

struct CopyBatch {
  ByteCopy copy[kBatch];
};

__global__ void copy_batch_kernel(CopyBatch batch) {
  const ByteCopy c = batch.copy[blockIdx.y];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool words = ((reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) |
                       static_cast<uintptr_t>(c.bytes)) & 15) == 0;
  if (words) {
    const uint4* src = static_cast<const uint4*>(c.src);
    uint4* dst = static_cast<uint4*>(c.dst);
    for (int64_t i = first; i < c.bytes / 16; i += stride) dst[i] = src[i];
  } else {
    const unsigned char* src = static_cast<const unsigned char*>(c.src);
    unsigned char* dst = static_cast<unsigned char*>(c.dst);
    for (int64_t i = first; i < c.bytes; i += stride) dst[i] = src[i];
  }
}

}  // namespace

void copy_many(const std::vector<ByteCopy>& copies, cudaStream_t stream) {
  constexpr int kThreads = 256;
  for (size_t begin = 0; begin < copies.size(); begin += kBatch) {
    const int count = static_cast<int>(std::min<size_t>(kBatch, copies.size() - begin));
    CopyBatch batch{};
    int64_t widest = 0;
    for (int i = 0; i < count; ++i) {
      const ByteCopy& c = copies[begin + i];
      ND_CHECK(c.bytes >= 0, "copy_many: negative size " << c.bytes);
      ND_CHECK(c.bytes == 0 || (c.src && c.dst), "copy_many: null pointer");
      batch.copy[i] = c;
      widest = std::max(widest, c.bytes);
    }
    if (widest == 0) continue;
    // Enough blocks per copy for the widest one in 16-byte words, at most 32 (the copies are small).
    const int64_t blocks = std::min<int64_t>(32, ceil_div(ceil_div(widest, int64_t{16}), int64_t{kThreads}));
    copy_batch_kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(count)), kThreads, 0,
                        stream_or_default(stream)>>>(batch);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace nd::cuda
