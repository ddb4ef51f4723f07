// Tile helpers shared by the tensor-core attention kernels (attention_mma_forward.cu and
// attention_mma_backward.cu): cp.async tile loads into padded shared tiles (rows padded by 16 bytes
// against bank conflicts), and warp-level tile products on mma fragments. A warp owns kRB blocks of
// 16 rows; B fragments loaded from shared memory once serve all kRB row blocks.
#pragma once
#include "kernels/attention_dropout.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma_bf16.cuh"

namespace nd::cuda::detail {
namespace {

using mma::a_tile_row;
using mma::b_kn_row;
using mma::b_nk_row;
using mma::c_pair_to_a;
using mma::ldmatrix_x4;
using mma::ldmatrix_x4_trans;
using mma::mma_bf16;

constexpr int kTile = 64;  // rows of a key tile (and of every backward tile)

template <int HS>
constexpr int padded() {
  return HS + 8;
}

struct Dims {
  int64_t T, C, NH;
};

// Starts copying rows [row0, row0 + kRows) of a (T, stride) bf16 matrix (columns [col0, col0 + HS))
// into a padded shared tile with cp.async; rows >= T become zeros. The caller commits and waits.
template <int HS, int kRows = kTile>
__device__ __forceinline__ void load_tile(uint16_t* tile, const nd::bf16* src, int64_t stride, int64_t col0,
                                          int64_t row0, int64_t T) {
  constexpr int kChunks = HS / 8;
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += blockDim.x) {
    int r = idx / kChunks, ch = idx % kChunks;
    bool valid = row0 + r < T;
    const nd::bf16* from = src + (valid ? (row0 + r) * stride : 0) + col0 + ch * 8;
    mma::cp_async16(tile + r * padded<HS>() + ch * 8, from, valid);
  }
}

// Starts copying the K and V tiles of key tile k_tile (keys [k_tile * kTile, + kTile) of head h)
// into stage k_tile & 1 of sKV, which holds two stages of (K, V). The caller commits.
template <int HS>
__device__ __forceinline__ void load_kv_stage(uint16_t* sKV, int k_tile, const nd::bf16* base, const Dims& d,
                                              int64_t h) {
  constexpr int kTileElems = kTile * padded<HS>();
  uint16_t* stage = sKV + (k_tile & 1) * 2 * kTileElems;
  const int64_t k0 = static_cast<int64_t>(k_tile) * kTile;
  load_tile<HS>(stage, base, 3 * d.C, d.C + h * HS, k0, d.T);
  load_tile<HS>(stage + kTileElems, base, 3 * d.C, 2 * d.C + h * HS, k0, d.T);
}

// One step of the double-buffered walk over key tiles: starts the copy of key tile k_tile + 1 when
// has_next, waits until tile k_tile's stage has landed, and returns its K tile (V follows it).
template <int HS>
__device__ __forceinline__ const uint16_t* next_kv_stage(uint16_t* sKV, int k_tile, bool has_next,
                                                         const nd::bf16* base, const Dims& d, int64_t h) {
  if (has_next) {  // prefetch the next stage while this one is used
    load_kv_stage<HS>(sKV, k_tile + 1, base, d, h);
    mma::cp_async_commit();
    mma::cp_async_wait<1>();
  } else {
    mma::cp_async_wait<0>();
  }
  __syncthreads();
  return sKV + (k_tile & 1) * 2 * kTile * padded<HS>();
}

// s[rb] (16 x 64) = A[rb] (16 x HS, fragments in registers) · Bᵀ, B a [64][HS] shared tile.
template <int HS, int kRB>
__device__ __forceinline__ void a_times_tile_t(float (&s)[kRB][8][4], const uint32_t (&a)[kRB][HS / 16][4],
                                               const uint16_t* tile, int lane) {
#pragma unroll
  for (int rb = 0; rb < kRB; ++rb)
#pragma unroll
    for (int n = 0; n < 8; ++n) s[rb][n][0] = s[rb][n][1] = s[rb][n][2] = s[rb][n][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < HS / 16; ++kk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t b[4];
      ldmatrix_x4(b, b_nk_row(tile, padded<HS>(), j * 16, kk * 16, lane));
#pragma unroll
      for (int rb = 0; rb < kRB; ++rb) {
        mma_bf16(s[rb][2 * j], a[rb][kk], b[0], b[1]);
        mma_bf16(s[rb][2 * j + 1], a[rb][kk], b[2], b[3]);
      }
    }
  }
}

// acc[rb] (16 x HS) += P[rb] (16 x 64, C fragments) · tile, tile a [64][HS] shared tile.
template <int HS, int kRB>
__device__ __forceinline__ void c_times_tile(float (&acc)[kRB][HS / 8][4], const float (&p)[kRB][8][4],
                                             const uint16_t* tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[kRB][4];
#pragma unroll
    for (int rb = 0; rb < kRB; ++rb) c_pair_to_a(a[rb], p[rb][2 * kk], p[rb][2 * kk + 1]);
#pragma unroll
    for (int j = 0; j < HS / 16; ++j) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, b_kn_row(tile, padded<HS>(), kk * 16, j * 16, lane));
#pragma unroll
      for (int rb = 0; rb < kRB; ++rb) {
        mma_bf16(acc[rb][2 * j], a[rb], b[0], b[1]);
        mma_bf16(acc[rb][2 * j + 1], a[rb], b[2], b[3]);
      }
    }
  }
}

// A fragments of kRB blocks of 16 rows starting at row0 of a shared tile.
template <int HS, int kRB>
__device__ __forceinline__ void load_a_fragments(uint32_t (&a)[kRB][HS / 16][4], const uint16_t* tile, int row0,
                                                 int lane) {
#pragma unroll
  for (int rb = 0; rb < kRB; ++rb)
#pragma unroll
    for (int kk = 0; kk < HS / 16; ++kk)
      ldmatrix_x4(a[rb][kk], a_tile_row(tile, padded<HS>(), row0 + rb * 16, kk * 16, lane));
}

// One-row-block forms, for the backward kernels.
template <int HS>
__device__ __forceinline__ void a_times_tile_t(float (&s)[8][4], const uint32_t (&a)[HS / 16][4], const uint16_t* tile,
                                               int lane) {
  a_times_tile_t<HS, 1>(reinterpret_cast<float(&)[1][8][4]>(s), reinterpret_cast<const uint32_t(&)[1][HS / 16][4]>(a),
                        tile, lane);
}

template <int HS>
__device__ __forceinline__ void c_times_tile(float (&acc)[HS / 8][4], const float (&p)[8][4], const uint16_t* tile,
                                             int lane) {
  c_times_tile<HS, 1>(reinterpret_cast<float(&)[1][HS / 8][4]>(acc), reinterpret_cast<const float(&)[1][8][4]>(p), tile,
                      lane);
}

template <int HS>
__device__ __forceinline__ void load_a_fragments(uint32_t (&a)[HS / 16][4], const uint16_t* tile, int warp, int lane) {
  load_a_fragments<HS, 1>(reinterpret_cast<uint32_t(&)[1][HS / 16][4]>(a), tile, warp * 16, lane);
}

// Dropout keep bits of the 32 elements a thread holds of a 16 x 64 C-fragment tile: bit 4n + e for
// fragment n, entry e (row g + 8 (e / 2), column 8n + 2c + (e & 1)), whose Philox counter is
// base[e / 2] + column * column_stride. Branch-free, so that the 32 independent draws interleave
// with each other and with the tile products.
__device__ __forceinline__ uint32_t draw_keep_bits(const AttentionDropout& drop, const uint64_t (&base)[2],
                                                   uint64_t column_stride, int c) {
  uint32_t bits = 0;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      uint64_t column = static_cast<uint64_t>(n * 8 + 2 * c + (e & 1));
      bits |= static_cast<uint32_t>(drop.kept(base[e / 2] + column * column_stride)) << (4 * n + e);
    }
  return bits;
}

__device__ __forceinline__ bool keep_bit(uint32_t bits, int n, int e) { return (bits >> (4 * n + e)) & 1u; }

// Dynamic shared memory above 48 KB needs the kernel's opt-in.
template <typename Kernel>
void allow_shared_memory(Kernel kernel, size_t smem) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
}

template <int HS>
size_t tile_bytes(int rows = kTile) {
  return static_cast<size_t>(rows) * padded<HS>() * sizeof(uint16_t);
}

}  // namespace
}  // namespace nd::cuda::detail
