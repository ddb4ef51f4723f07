// The FP8 quantise-transpose of fp8_quantize.h. The fast path takes a 64 x 64 tile per block of 256
// threads (fp8::quantize_transpose_tiles of fp8_quantize_transpose.cuh, reading x itself). Shapes it
// cannot take (cols not a multiple of 8, rows not of 4, misaligned pointers) go through 32 x 32
// tiles one element a thread; with no transpose asked for, the flat quantise runs instead, since
// the codes are x's order.
#include "kernels/cuda/fp8_quantize.h"
#include "kernels/cuda/fp8_quantize_transpose.cuh"

namespace nd::cuda {
namespace {

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
  const int tile = vec ? fp8::kTile : kSmallTile;
  ND_CHECK(ceil_div(rows, tile) <= 65535, "fp8_quantize_transpose: " << rows << " rows is more than the grid takes");
  const dim3 grid(static_cast<unsigned>(ceil_div(cols, tile)), static_cast<unsigned>(ceil_div(rows, tile)));
  if (vec)
    fp8::quantize_transpose_tiles<fp8::PlainSource<T>, false><<<grid, fp8::kTileThreads, 0, stream>>>(
        fp8::PlainSource<T>{x}, rows, cols, scale, kind, codes, codes_t, amax_bits, scale_inv, nullptr);
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
