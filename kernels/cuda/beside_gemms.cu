// sum_blocks and copy_bytes_beside_gemms: 16-byte-vectorised, in one-warp blocks that fit beside a
// GEMM (beside_gemms.cuh).
#include <algorithm>

#include "kernels/cuda/beside_gemms.cuh"
#include "kernels/cuda/beside_gemms.h"

namespace nd::cuda {
namespace {

template <typename T>
struct SumBlocksOp {
  const T* blocks[kSumBlocksMax];
  int count;
  T* out;
  float scale;
  bool vec;
  template <int kPack>
  __device__ void pack(int64_t i) const {
    float sum[kPack], x[kPack];
    load_f32<kPack>(blocks[0] + i, sum, vec);
    for (int b = 1; b < count; ++b) {
      load_f32<kPack>(blocks[b] + i, x, vec);
#pragma unroll
      for (int k = 0; k < kPack; ++k) sum[k] += x[k];
    }
#pragma unroll
    for (int k = 0; k < kPack; ++k) sum[k] *= scale;
    store_f32<kPack>(out + i, sum, vec);
  }
};

// A one-warp-block copy with four 16-byte loads in flight per thread (one in flight took 1.5x
// as long beside a GEMM); the bytes past the last whole 16-byte word, or all of them where a
// pointer is not 16-byte aligned, one by one.
constexpr int kCopyUnroll = 4;

__global__ void __launch_bounds__(kBesideGemmsThreads)
    copy_bytes_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src, int64_t words, int64_t bytes) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < words; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < words; i += stride) dst[i] = src[i];
  auto* d = reinterpret_cast<unsigned char*>(dst);
  const auto* s = reinterpret_cast<const unsigned char*>(src);
  for (int64_t b = words * 16 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < bytes; b += stride)
    d[b] = s[b];
}

}  // namespace

template <typename T>
void sum_blocks(const T* const* blocks, int count, T* out, int64_t n, float scale, cudaStream_t stream) {
  ND_CHECK(count >= 1 && count <= kSumBlocksMax, "sum_blocks: 1 to " << kSumBlocksMax << " blocks, got " << count);
  ND_CHECK(n >= 0, "sum_blocks: negative size " << n);
  SumBlocksOp<T> op{};
  op.count = count;
  op.out = out;
  op.scale = scale;
  op.vec = aligned16(out);
  for (int b = 0; b < count; ++b) {
    ND_CHECK(n == 0 || blocks[b], "sum_blocks: null block " << b);
    op.blocks[b] = blocks[b];
    op.vec = op.vec && aligned16(blocks[b]);
  }
  launch_beside_gemms<T>(n, op, stream);
}

template void sum_blocks<float>(const float* const*, int, float*, int64_t, float, cudaStream_t);
template void sum_blocks<bf16>(const bf16* const*, int, bf16*, int64_t, float, cudaStream_t);

void copy_bytes_beside_gemms(void* dst, const void* src, int64_t bytes, cudaStream_t stream) {
  ND_CHECK(bytes >= 0, "copy_bytes_beside_gemms: negative size " << bytes);
  if (bytes == 0) return;
  const int64_t words = aligned16(src) && aligned16(dst) ? bytes / 16 : 0;
  const auto blocks = static_cast<unsigned>(
      std::min<int64_t>(beside_gemms_blocks(), ceil_div(std::max<int64_t>(words, 1), kBesideGemmsThreads)));
  copy_bytes_kernel<<<blocks, kBesideGemmsThreads, 0, stream_or_default(stream)>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), words, bytes);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace nd::cuda
