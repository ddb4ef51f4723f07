// The FP8 quantise-transpose of fp8_quantize.h. The fast path takes a 64 x 64 tile per block of 256
// threads: each thread quantises eight elements of a row (16-byte loads, one 8-byte store of the
// codes), the tile's codes pass through shared memory, and each thread then writes a 4 x 4 block of
// the transpose (four 4-byte stores, the bytes moved with byte permutes), so a warp's stores cover
// 64 contiguous bytes of two rows of the transpose. Shapes it cannot take (cols not a multiple of
// 8, rows not of 4, misaligned pointers) go through 32 x 32 tiles one element a thread; with no
// transpose asked for, the flat quantise runs instead, since the codes are x's order.
#include "kernels/cuda/fp8_quantize.cuh"
#include "kernels/cuda/fp8_quantize.h"

namespace nd::cuda {
namespace {

constexpr int kTile = 64, kThreads = 256;
constexpr int kChunksPerRow = kTile / fp8::kVec;      // 8 threads load a tile row
constexpr int kRowsPerPass = kThreads / kChunksPerRow;  // 32 tile rows a pass
constexpr int kTileWords = kTile / 4 + 1;             // a tile row's codes as words, plus one against bank conflicts

// out[i] = byte i of each of a[0..3]: the transpose of a 4 x 4 block of bytes held one row a word.
__device__ __forceinline__ void transpose4x4(const uint32_t (&a)[4], uint32_t (&out)[4]) {
  const uint32_t lo01 = __byte_perm(a[0], a[1], 0x5140), hi01 = __byte_perm(a[0], a[1], 0x7362);
  const uint32_t lo23 = __byte_perm(a[2], a[3], 0x5140), hi23 = __byte_perm(a[2], a[3], 0x7362);
  out[0] = __byte_perm(lo01, lo23, 0x5410);
  out[1] = __byte_perm(lo01, lo23, 0x7632);
  out[2] = __byte_perm(hi01, hi23, 0x5410);
  out[3] = __byte_perm(hi01, hi23, 0x7632);
}

// Needs cols % 8 == 0, rows % 4 == 0, x 16-byte, codes (or null) 8-byte and codes_t 4-byte aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    fp8_quantize_transpose_vec_kernel(const T* x, int64_t rows, int64_t cols, const float* scale,
                                      __nv_fp8_interpretation_t kind, uint8_t* codes, uint8_t* codes_t,
                                      unsigned int* amax_bits, float* scale_inv) {
  __shared__ uint32_t tile[kTile][kTileWords];
  const float s = *scale;
  const int tid = threadIdx.x;
  if (scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && tid == 0) *scale_inv = 1.0f / s;
  const int64_t row0 = (int64_t)blockIdx.y * kTile, col0 = (int64_t)blockIdx.x * kTile;
  unsigned int local = 0;
  const int chunk = tid % kChunksPerRow;
#pragma unroll
  for (int r = tid / kChunksPerRow; r < kTile; r += kRowsPerPass) {
    const int64_t row = row0 + r, col = col0 + chunk * fp8::kVec;
    if (row < rows && col < cols) {  // cols % 8 == 0: the eight are all inside
      float v[fp8::kVec];
      fp8::load8(x + row * cols + col, v);
      const uint2 q = fp8::codes8(v, s, kind, local);
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
  if (in_row < rows && in_col < cols) {  // rows % 4 == 0 and cols % 8 == 0: the block is inside
    uint32_t a[4], t[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) a[k] = tile[4 * j + k][b];
    transpose4x4(a, t);
#pragma unroll
    for (int i = 0; i < 4; ++i) *reinterpret_cast<uint32_t*>(codes_t + (in_col + i) * rows + in_row) = t[i];
  }
  fp8::fold_amax<kThreads>(local, amax_bits);
}

// Any shape: one 32 x 32 tile per block of 32 x 8 threads, an element a thread, loaded by rows and
// written as codes by rows and, from shared memory, as the transpose's codes by its rows.
constexpr int kSmallTile = 32, kSmallTileRows = 8;

template <typename T>
__global__ void fp8_quantize_transpose_any_kernel(const T* x, int64_t rows, int64_t cols, const float* scale,
                                                  __nv_fp8_interpretation_t kind, uint8_t* codes, uint8_t* codes_t,
                                                  unsigned int* amax_bits, float* scale_inv) {
  __shared__ uint8_t tile[kSmallTile][kSmallTile + 4];
  const float s = *scale;
  if (scale_inv != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0)
    *scale_inv = 1.0f / s;
  const int64_t row0 = (int64_t)blockIdx.y * kSmallTile, col0 = (int64_t)blockIdx.x * kSmallTile;
  unsigned int local = 0;
  for (int r = threadIdx.y; r < kSmallTile; r += kSmallTileRows) {
    const int64_t row = row0 + r, col = col0 + threadIdx.x;
    if (row < rows && col < cols) {
      const float v = to_f32(x[row * cols + col]);
      local = max(local, fp8::magnitude_bits(v));
      const uint8_t c = fp8::code_of(v, s, kind);
      if (codes != nullptr) codes[row * cols + col] = c;
      tile[r][threadIdx.x] = c;
    }
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kSmallTile; r += kSmallTileRows) {
    const int64_t out_row = col0 + r, out_col = row0 + threadIdx.x;  // (cols, rows)
    if (out_row < cols && out_col < rows) codes_t[out_row * rows + out_col] = tile[threadIdx.x][r];
  }
  fp8::fold_amax<kSmallTile * kSmallTileRows>(local, amax_bits);
}

bool aligned_to(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

template <typename T>
void launch_transpose(const T* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format, uint8_t* codes,
                      uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  ND_CHECK(rows >= 0 && cols >= 0 && scale != nullptr && amax != nullptr, "fp8_quantize_transpose: bad arguments");
  if (rows == 0 || cols == 0) return;
  ND_CHECK(x != nullptr && (codes != nullptr || codes_t != nullptr), "fp8_quantize_transpose: nothing to write");
  if (codes_t == nullptr) return fp8::quantize_flat(x, rows * cols, scale, format, codes, amax, scale_inv, stream);
  stream = stream_or_default(stream);
  const __nv_fp8_interpretation_t kind = fp8::interpretation(format);
  auto* amax_bits = reinterpret_cast<unsigned int*>(amax);
  const bool vec = cols % fp8::kVec == 0 && rows % 4 == 0 && aligned_to(x, 16) &&
                   (codes == nullptr || aligned_to(codes, 8)) && aligned_to(codes_t, 4);
  const int tile = vec ? kTile : kSmallTile;
  ND_CHECK(ceil_div(rows, tile) <= 65535, "fp8_quantize_transpose: " << rows << " rows is more than the grid takes");
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, tile)), static_cast<unsigned>(ceil_div(rows, tile)));
  if (vec)
    fp8_quantize_transpose_vec_kernel<T>
        <<<grid, kThreads, 0, stream>>>(x, rows, cols, scale, kind, codes, codes_t, amax_bits, scale_inv);
  else
    fp8_quantize_transpose_any_kernel<T><<<grid, dim3(kSmallTile, kSmallTileRows), 0, stream>>>(
        x, rows, cols, scale, kind, codes, codes_t, amax_bits, scale_inv);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fp8_quantize_transpose(const float* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  launch_transpose(x, rows, cols, scale, format, codes, codes_t, amax, scale_inv, stream);
}
void fp8_quantize_transpose(const bf16* x, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                            uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv, cudaStream_t stream) {
  launch_transpose(x, rows, cols, scale, format, codes, codes_t, amax, scale_inv, stream);
}

}  // namespace nd::cuda
