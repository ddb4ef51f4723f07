// Per-layer statistics kernels: a grid (blocks per slot, slots) of strided sums reduced per block
// and added to the slot's doubles with one atomic each; the attention entropy by an online softmax
// over each row's keys, lanes merged by shuffles, one atomic per block. For the usual head sizes
// the entropy kernel works on tiles staged in shared memory (a block takes 32 query rows and walks
// the causal keys 32 at a time), else with one warp per row reading the keys from global memory.
// Atomics make the last bits order-dependent, which statistics can afford.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/layer_stats.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kElementsPerBlock = 16384;
constexpr int kMaxBlocksPerSlot = 256;
constexpr int kRowsPerBlock = 8;  // warps per block of the entropy kernel

template <typename T>
__device__ void slot_stats(const StatSlot<T>& s, double* out) {
  __shared__ float scratch[32];
  float acc[kStatsPerSlot] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = first; i < s.n; i += stride) {
    const float x = to_f32(s.x[i]);
    const float d = s.ref ? x - to_f32(s.ref[i]) : x;
    const float a = fabsf(x);
    acc[kSumOfSquares] += d * d;
    acc[kBf16Underflow] += (a > 0.0f && a <= kBf16FlushBelow) ? 1.0f : 0.0f;
    acc[kFp16Underflow] += (a > 0.0f && a <= kFp16FlushBelow) ? 1.0f : 0.0f;
    acc[kGeluSaturated] += x < kGeluSaturatedBelow ? 1.0f : 0.0f;
  }
#pragma unroll
  for (int k = 0; k < kStatsPerSlot; ++k) {
    const float total = block_sum(acc[k], scratch);
    if (threadIdx.x == 0 && total != 0.0f) atomicAdd(out + s.out + k, static_cast<double>(total));
  }
}

template <typename T>
__global__ void slots_stats_kernel(const StatSlot<T>* slots, double* out) {
  slot_stats(slots[blockIdx.y], out);
}

template <typename T>
__global__ void one_slot_stats_kernel(StatSlot<T> slot, double* out) {
  slot_stats(slot, out);
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(n, kElementsPerBlock), kMaxBlocksPerSlot)));
}

// Running (max, sum of e^(s - max), sum of e^(s - max) (s - max)) of a softmax row; merged
// across lanes. An empty part has z = 0.
struct EntropyAcc {
  float m = -INFINITY, z = 0.0f, w = 0.0f;
};

__device__ __forceinline__ EntropyAcc merge(EntropyAcc a, EntropyAcc b) {
  if (a.z == 0.0f) return b;
  if (b.z == 0.0f) return a;
  const float m = fmaxf(a.m, b.m);
  const float ea = __expf(a.m - m), eb = __expf(b.m - m);
  EntropyAcc r;
  r.m = m;
  r.z = a.z * ea + b.z * eb;
  r.w = ea * (a.w + a.z * (a.m - m)) + eb * (b.w + b.z * (b.m - m));
  return r;
}

// grid (ceil(T / kRowsPerBlock), NH, B), block kRowsPerBlock warps: warp r takes row
// t = blockIdx.x * kRowsPerBlock + r of head blockIdx.y in sequence blockIdx.z.
template <typename T>
__global__ void attention_entropy_kernel(const T* qkv, int64_t T_, int64_t C, int64_t hs, float scale, double* out) {
  __shared__ float row_entropy[kRowsPerBlock];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  EntropyAcc acc;
  if (t < T_) {
    const T* q = qkv + (b * T_ + t) * 3 * C + h * hs;
    for (int64_t j = lane; j <= t; j += 32) {
      const T* k = qkv + (b * T_ + j) * 3 * C + C + h * hs;
      float dot = 0.0f;
      for (int64_t d = 0; d < hs; ++d) dot += to_f32(q[d]) * to_f32(k[d]);
      EntropyAcc one;
      one.m = dot * scale;
      one.z = 1.0f;
      one.w = 0.0f;
      acc = merge(acc, one);
    }
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    EntropyAcc other;
    other.m = __shfl_xor_sync(0xffffffffu, acc.m, offset);
    other.z = __shfl_xor_sync(0xffffffffu, acc.z, offset);
    other.w = __shfl_xor_sync(0xffffffffu, acc.w, offset);
    acc = merge(acc, other);
  }
  if (lane == 0) row_entropy[warp] = t < T_ ? logf(acc.z) - acc.w / acc.z : 0.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int r = 0; r < kRowsPerBlock; ++r) total += row_entropy[r];
    atomicAdd(out + h, total);
  }
}

// The tiled entropy kernel: grid (ceil(T / kTile), NH, B), kTileWarps warps; warp w owns query
// rows w * kRowsPerWarp ... of the block's kTile rows. Each key tile is staged once in shared
// memory (f32, rows padded by 4 floats so that the lanes' float4 reads hit distinct banks) and
// lane l scores key l of the tile against the warp's rows, whose scaled queries stay in shared
// memory too (broadcast reads), where the per-row kernel's lanes each read a whole key row from
// global memory, 32 scattered rows at a time.
constexpr int kTile = 32;
constexpr int kTileWarps = 8;
constexpr int kRowsPerWarp = kTile / kTileWarps;

template <typename T, int HS>
__global__ void __launch_bounds__(kTileWarps * 32)
    attention_entropy_tiled_kernel(const T* qkv, int64_t T_, int64_t C, float scale, double* out) {
  constexpr int kPad = HS + 4;
  __shared__ __align__(16) float q_s[kTile][kPad];
  __shared__ __align__(16) float k_s[kTile][kPad];
  __shared__ float row_entropy[kTile];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kTile, h = blockIdx.y;
  const T* seq = qkv + static_cast<int64_t>(blockIdx.z) * T_ * 3 * C;
  for (int i = threadIdx.x; i < kTile * HS; i += blockDim.x) {
    const int r = i / HS, d = i % HS;
    const int64_t t = t0 + r;
    q_s[r][d] = t < T_ ? to_f32(seq[t * 3 * C + h * HS + d]) * scale : 0.0f;
  }
  EntropyAcc acc[kRowsPerWarp];
  const int64_t last_key = min(T_ - 1, t0 + kTile - 1);  // the causal keys of the block's rows
  for (int64_t j0 = 0; j0 <= last_key; j0 += kTile) {
    __syncthreads();  // the previous tile is scored (and, the first time, the queries are staged)
    for (int i = threadIdx.x; i < kTile * HS; i += blockDim.x) {
      const int r = i / HS, d = i % HS;
      const int64_t j = j0 + r;
      k_s[r][d] = j < T_ ? to_f32(seq[j * 3 * C + C + h * HS + d]) : 0.0f;
    }
    __syncthreads();
    float dot[kRowsPerWarp] = {};
#pragma unroll 4
    for (int d = 0; d < HS; d += 4) {
      const float4 k = *reinterpret_cast<const float4*>(&k_s[lane][d]);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float4 q = *reinterpret_cast<const float4*>(&q_s[warp * kRowsPerWarp + r][d]);
        dot[r] += q.x * k.x + q.y * k.y + q.z * k.z + q.w * k.w;
      }
    }
    const int64_t j = j0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t t = t0 + warp * kRowsPerWarp + r;
      if (t < T_ && j <= t) {
        EntropyAcc one;
        one.m = dot[r];
        one.z = 1.0f;
        one.w = 0.0f;
        acc[r] = merge(acc[r], one);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      EntropyAcc other;
      other.m = __shfl_xor_sync(0xffffffffu, acc[r].m, offset);
      other.z = __shfl_xor_sync(0xffffffffu, acc[r].z, offset);
      other.w = __shfl_xor_sync(0xffffffffu, acc[r].w, offset);
      acc[r] = merge(acc[r], other);
    }
    const int64_t t = t0 + warp * kRowsPerWarp + r;
    if (lane == 0) row_entropy[warp * kRowsPerWarp + r] = t < T_ ? logf(acc[r].z) - acc[r].w / acc[r].z : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int r = 0; r < kTile; ++r) total += row_entropy[r];
    atomicAdd(out + h, total);
  }
}

// Launches the tiled kernel where the head size has an instance; false otherwise.
template <typename T>
bool attention_entropy_tiled(const T* qkv, int64_t B, int64_t T_, int64_t C, int64_t NH, double* out,
                             cudaStream_t stream) {
  const int64_t hs = C / NH;
  const dim3 grid(static_cast<unsigned>(ceil_div(T_, int64_t{kTile})), static_cast<unsigned>(NH), static_cast<unsigned>(B));
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  switch (hs) {
#define ND_ENTROPY_TILED_CASE(HS)                                                                          \
  case HS:                                                                                                  \
    attention_entropy_tiled_kernel<T, HS><<<grid, kTileWarps * 32, 0, stream>>>(qkv, T_, C, scale, out); \
    return true;
    ND_ENTROPY_TILED_CASE(16)
    ND_ENTROPY_TILED_CASE(32)
    ND_ENTROPY_TILED_CASE(64)
    ND_ENTROPY_TILED_CASE(80)
    ND_ENTROPY_TILED_CASE(128)
#undef ND_ENTROPY_TILED_CASE
    default:
      return false;
  }
}

}  // namespace

template <typename T>
void tensor_stats(const DeviceSlots<StatSlot<T>>& slots, double* out, cudaStream_t stream) {
  ND_CHECK(out, "tensor_stats: null output pointer");
  ND_CHECK(slots.count() < 65536, "tensor_stats: " << slots.count() << " tensors is too many for one launch");
  if (slots.count() == 0) return;
  dim3 grid(blocks_for(slots.max_n()), static_cast<unsigned>(slots.count()));
  slots_stats_kernel<T><<<grid, kThreads, 0, stream_or_default(stream)>>>(slots.data(), out);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void tensor_stats(const StatSlot<T>& slot, double* out, cudaStream_t stream) {
  ND_CHECK(out && slot.x, "tensor_stats: null pointer");
  if (slot.n == 0) return;
  one_slot_stats_kernel<T><<<blocks_for(slot.n), kThreads, 0, stream_or_default(stream)>>>(slot, out);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void attention_entropy(const T* qkv, int64_t B, int64_t T_, int64_t C, int64_t NH, double* out, cudaStream_t stream) {
  ND_CHECK(qkv && out, "attention_entropy: null pointer");
  ND_CHECK(NH > 0 && C % NH == 0, "attention_entropy: C " << C << " is not a multiple of NH " << NH);
  ND_CHECK(NH < 65536 && B < 65536, "attention_entropy: grid too large (B " << B << ", NH " << NH << ")");
  if (B == 0 || T_ == 0) return;
  if (attention_entropy_tiled(qkv, B, T_, C, NH, out, stream_or_default(stream))) {
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  const int64_t hs = C / NH;
  dim3 grid(static_cast<unsigned>(ceil_div(T_, kRowsPerBlock)), static_cast<unsigned>(NH), static_cast<unsigned>(B));
  attention_entropy_kernel<T><<<grid, kRowsPerBlock * 32, 0, stream_or_default(stream)>>>(
      qkv, T_, C, hs, 1.0f / sqrtf(static_cast<float>(hs)), out);
  CUDA_CHECK(cudaGetLastError());
}

#define ND_INSTANTIATE_LAYER_STATS(T)                                                              \
  template void tensor_stats<T>(const DeviceSlots<StatSlot<T>>&, double*, cudaStream_t);           \
  template void tensor_stats<T>(const StatSlot<T>&, double*, cudaStream_t);                        \
  template void attention_entropy<T>(const T*, int64_t, int64_t, int64_t, int64_t, double*, cudaStream_t)
ND_CUDA_INSTANTIATE(ND_INSTANTIATE_LAYER_STATS);

}  // namespace nd::cuda
