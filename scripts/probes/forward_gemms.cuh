// What both probes here put on the GPU as the load: the 6.7B GPT's forward GEMMs (qkv, attention
// projection, c_fc, c_proj) of 32 blocks at 2,048 tokens, bf16 with f32 accumulation, queued on
// one stream; and the error check they share.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e)); std::exit(1); } } while (0)

class ForwardGemms {
 public:
  explicit ForwardGemms(cudaStream_t stream) {
    CK(cudaMalloc(&x_, size_t(kTokens) * 4 * kWidth * 2));
    CK(cudaMalloc(&w_, size_t(4 * kWidth) * kWidth * 2));
    CK(cudaMalloc(&y_, size_t(kTokens) * 4 * kWidth * 2));
    CK(cudaMemset(x_, 0, size_t(kTokens) * 4 * kWidth * 2));
    CK(cudaMemset(w_, 0, size_t(4 * kWidth) * kWidth * 2));
    cublasCreate(&handle_);
    cublasSetStream(handle_, stream);
  }
  // Queues the 128 GEMMs (4 a block) on the stream.
  void enqueue() {
    const float one = 1, zero = 0;
    for (int b = 0; b < 32; ++b)
      for (const Shape& s : kShapes)
        cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, s.n, kTokens, s.k, &one, w_, CUDA_R_16BF, s.k, x_, CUDA_R_16BF,
                     s.k, &zero, y_, CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }

 private:
  static constexpr int kTokens = 2048, kWidth = 4096;
  struct Shape { int n, k; };
  const std::vector<Shape> kShapes = {{3 * kWidth, kWidth}, {kWidth, kWidth}, {4 * kWidth, kWidth}, {kWidth, 4 * kWidth}};
  __nv_bfloat16 *x_ = nullptr, *w_ = nullptr, *y_ = nullptr;
  cublasHandle_t handle_ = nullptr;
};
