// The 64 x 64-tile FP8 quantise-transpose kernel of fp8_quantize_transpose.cu, templated on where
// its values come from (a Source: x itself, or a function of other tensors computed on the way, as
// the fused GELU quantises of fp8_gelu_quantize.cu do) and optionally summing the tile's columns,
// so that every variant shares one kernel: a block of 256 threads quantises a tile, each thread
// eight elements of a row (16-byte loads, one 8-byte store of the codes), the codes pass through
// shared memory, and each thread then writes a 4 x 4 block of the transpose (four 4-byte stores,
// the bytes moved with byte permutes), so a warp's stores cover 64 contiguous bytes of two rows.
#pragma once
#include "kernels/cuda/fp8_quantize.cuh"

namespace nd::cuda::fp8 {

constexpr int kTile = 64, kTileThreads = 256;
constexpr int kChunksPerRow = kTile / kVec;                  // 8 threads load a tile row
constexpr int kRowsPerPass = kTileThreads / kChunksPerRow;  // 32 tile rows a pass
constexpr int kTileWords = kTile / 4 + 1;                    // a tile row's codes as words, plus one against bank conflicts

// The plain Source: eight elements of x from element i on.
template <typename T>
struct PlainSource {
  const T* x;
  __device__ __forceinline__ void load8(int64_t i, float (&v)[kVec]) const { fp8::load8(x + i, v); }
};

// out[i] = byte i of each of a[0..3]: the transpose of a 4 x 4 block of bytes held one row a word.
__device__ __forceinline__ void transpose4x4(const uint32_t (&a)[4], uint32_t (&out)[4]) {
  const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
  const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
  out[0] = __byte_perm(lo01, lo23, 0x5410);
  out[1] = __byte_perm(lo01, lo23, 0x7632);
  out[2] = __byte_perm(hi01, hi23, 0x5410);
  out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// The values src gives for the (rows, cols) matrix -> codes (or null), codes_t (or null), the amax
// folded into *amax_bits, 1 / scale into *scale_inv (or null). With kColumnSums, the f32 sum of
// each column over the tile's rows goes to column_partials[blockIdx.y * cols + column] (one row of
// partials per 64-row tile, for column_finish_kernel of column_sum.cuh). Grid (column tiles, row
// tiles) of kTileThreads. Needs cols % 8 == 0, rows % 4 == 0, the source's pointers 16-byte,
// codes 8-byte and codes_t 4-byte aligned.
template <typename Source, bool kColumnSums>
__global__ void __launch_bounds__(kTileThreads)
    quantize_transpose_tiles(Source src, int64_t rows, int64_t cols, const float* scale,
                             __nv_fp8_interpretation_t kind, uint8_t* codes, uint8_t* codes_t,
                             unsigned int* amax_bits, float* scale_inv, float* column_partials) {
  __shared__ uint32_t tile[kTile][kTileWords];
  const float s = *scale;
  const int tid = threadIdx.x;
  if (scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0) *scale_inv = 1.0f / s;
  const int64_t row0 = (int64_t)blockIdx.y * kTile, col0 = (int64_t)blockIdx.x * kTile;
  unsigned int local = 0;
  float sums[kVec] = {};
  const int chunk = tid % kChunksPerRow;
#pragma unroll
  for (int r = tid / kChunksPerRow; r < kTile; r += kRowsPerPass) {
    const int64_t row = row0 + r, col = col0 + chunk * kVec;
    if (row < rows && col < cols) {  // cols % 8 == 0: the eight are all inside
      float v[kVec];
      src.load8(row * cols + col, v);
      if constexpr (kColumnSums) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) sums[k] += v[k];
      }
      const uint2 q = codes8(v, s, kind, local);
      if (codes != nullptr) *reinterpret_cast<uint2*>(codes + row * cols + col) = q;
      tile[r][2 * chunk] = q.x;
      tile[r][2 * chunk + 1] = q.y;
    }
  }
  __syncthreads();
  // Thread (j, b): tile rows 4j..4j+3 and columns 4b..4b+3, written as rows 4b..4b+3 of the
  // transpose at its columns 4j..4j+3; j varies fastest, so 16 threads fill 64 bytes of a row.
  const int j = tid % (kTile / 4), b = tid / (kTile / 4);
  const int64_t in_row = row0 + 4 * j, in_col = col0 + 4 * b;
  if (codes_t != nullptr && in_row < rows && in_col < cols) {  // rows % 4, cols % 8 == 0: inside
    uint32_t a[4], t[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) a[k] = tile[4 * j + k][b];
    transpose4x4(a, t);
#pragma unroll
    for (int i = 0; i < 4; ++i) *reinterpret_cast<uint32_t*>(codes_t + (in_col + i) * rows + in_row) = t[i];
  }
  if constexpr (kColumnSums) {
    // The 32 threads of a column chunk each hold two rows' sums: through shared memory, then one
    // thread a column adds them in a fixed order (deterministic).
    __shared__ float part[kRowsPerPass][kTile + 1];
#pragma unroll
    for (int k = 0; k < kVec; ++k) part[tid / kChunksPerRow][chunk * kVec + k] = sums[k];
    __syncthreads();
    if (tid < kTile && col0 + tid < cols) {
      float total = 0.0f;
#pragma unroll 8
      for (int p = 0; p < kRowsPerPass; ++p) total += part[p][tid];
      column_partials[(int64_t)blockIdx.y * cols + col0 + tid] = total;
    }
  }
  fold_amax<kTileThreads>(local, amax_bits);
}

}  // namespace nd::cuda::fp8
