// The GELU-fused FP8 quantises of fp8_gelu_quantize.h: the 64 x 64-tile quantise-transpose kernel
// (fp8_quantize_transpose.cuh) with Sources that compute the GELU (or its gradient) in f32 exactly
// as the elementwise kernels do (gelu.cuh) and round it to bf16 before quantising, as the unfused
// path reads it back; the backward also sums the tile's columns for c_fc's bias gradient.
#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/fp8_gelu_quantize.h"
#include "kernels/cuda/fp8_quantize_transpose.cuh"
#include "kernels/cuda/gelu.cuh"

namespace nd::cuda {
namespace {

// The value the unfused kernel stores and the quantise then reads: v rounded to bf16.
__device__ __forceinline__ float through_bf16(float v) { return to_f32(from_f32<bf16>(v)); }

struct GeluSource {
  const bf16* h;
  __device__ __forceinline__ void load8(int64_t i, float (&v)[fp8::kVec]) const {
    fp8::load8(h + i, v);
#pragma unroll
    for (int k = 0; k < fp8::kVec; ++k) v[k] = through_bf16(gelu_math::gelu(v[k]));
  }
};

struct GeluGradSource {
  const bf16* dg;
  const bf16* h;
  __device__ __forceinline__ void load8(int64_t i, float (&v)[fp8::kVec]) const {
    float a[fp8::kVec];
    fp8::load8(dg + i, v);
    fp8::load8(h + i, a);
#pragma unroll
    for (int k = 0; k < fp8::kVec; ++k) v[k] = through_bf16(v[k] * gelu_math::gelu_grad(a[k]));
  }
};

bool aligned_to(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

void check_args(const char* what, const bf16* in, int64_t rows, int64_t cols, const float* scale, uint8_t* codes,
                uint8_t* codes_t, float* amax) {
  ND_CHECK(rows >= 0 && cols >= 0 && scale != nullptr && amax != nullptr, what << ": bad arguments");
  ND_CHECK(rows == 0 || cols == 0 || codes != nullptr || codes_t != nullptr, what << ": nothing to write");
  ND_CHECK(cols % fp8::kVec == 0 && rows % 4 == 0,
           what << ": needs cols a multiple of 8 and rows of 4, got " << rows << " x " << cols);
  ND_CHECK((rows == 0 || cols == 0 || aligned_to(in, 16)) && (codes == nullptr || aligned_to(codes, 8)) &&
               (codes_t == nullptr || aligned_to(codes_t, 4)),
           what << ": misaligned buffers");
  ND_CHECK(ceil_div(rows, fp8::kTile) <= 65535, what << ": " << rows << " rows is more than the grid takes");
}

dim3 tile_grid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned>(ceil_div(cols, fp8::kTile)), static_cast<unsigned>(ceil_div(rows, fp8::kTile)));
}

}  // namespace

void fp8_gelu_quantize_transpose(const bf16* h, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                                 uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv,
                                 cudaStream_t stream) {
  check_args("fp8_gelu_quantize_transpose", h, rows, cols, scale, codes, codes_t, amax);
  if (rows == 0 || cols == 0) return;
  fp8::quantize_transpose_tiles<GeluSource, false>
      <<<tile_grid(rows, cols), fp8::kTileThreads, 0, stream_or_default(stream)>>>(
          GeluSource{h}, rows, cols, scale, fp8::interpretation(format), codes, codes_t,
          reinterpret_cast<unsigned int*>(amax), scale_inv, nullptr);
  CUDA_CHECK(cudaGetLastError());
}

void fp8_dgelu_quantize_transpose(const bf16* dg, const bf16* h, int64_t rows, int64_t cols, const float* scale,
                                  Fp8Format format, uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv,
                                  GradDest<bf16> db, cudaStream_t stream) {
  const char* what = "fp8_dgelu_quantize_transpose";
  check_args(what, dg, rows, cols, scale, codes, codes_t, amax);
  ND_CHECK(rows == 0 || cols == 0 || aligned_to(h, 16), what << ": misaligned buffers");
  stream = stream_or_default(stream);
  if (rows == 0 || cols == 0) {
    if (db.ptr && !db.accumulate) CUDA_CHECK(cudaMemsetAsync(db.ptr, 0, cols * sizeof(bf16), stream));
    return;
  }
  const dim3 grid = tile_grid(rows, cols);
  const auto kind = fp8::interpretation(format);
  auto* amax_bits = reinterpret_cast<unsigned int*>(amax);
  if (db.ptr == nullptr) {
    fp8::quantize_transpose_tiles<GeluGradSource, false><<<grid, fp8::kTileThreads, 0, stream>>>(
        GeluGradSource{dg, h}, rows, cols, scale, kind, codes, codes_t, amax_bits, scale_inv, nullptr);
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  // One row of f32 partials per 64-row tile, added up in tile order by column_sum.cuh's finish.
  const int device = current_cuda_device();
  auto* partial = static_cast<float*>(device_alloc(grid.y * cols * sizeof(float), device));
  fp8::quantize_transpose_tiles<GeluGradSource, true><<<grid, fp8::kTileThreads, 0, stream>>>(
      GeluGradSource{dg, h}, rows, cols, scale, kind, codes, codes_t, amax_bits, scale_inv, partial);
  CUDA_CHECK(cudaGetLastError());
  column_finish_kernel<bf16, 1><<<static_cast<unsigned>(ceil_div(cols, 256)), 256, 0, stream>>>(
      partial, ColumnDests<bf16, 1>{{db}}, static_cast<int>(grid.y), static_cast<int>(cols));
  CUDA_CHECK(cudaGetLastError());
  device_free(partial, device);  // reused only by later work on this stream
}

}  // namespace nd::cuda
