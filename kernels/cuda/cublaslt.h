// The one matrix-multiply entry point of the CUDA backend: cuBLASLt with one handle and one 32 MiB
// workspace per device, and the chosen algorithm cached per problem shape (no heuristic query in
// the steady state). f32 runs in true f32 (no TF32), so it can match the CPU reference; bf16 runs
// on tensor cores with f32 accumulation.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// Column-major, as BLAS: D (m, n) = op(A) (m, k) · op(B) (k, n) + beta · D, then + bias (m) on every
// column when bias is not null. A, B, D, bias share `dtype` (F32 or BF16).
struct GemmProblem {
  DType dtype = DType::F32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int64_t lda = 0;
  const void* B = nullptr;
  int64_t ldb = 0;
  void* D = nullptr;
  int64_t ldd = 0;
  float beta = 0.0f;
  const void* bias = nullptr;
};

void gemm(const GemmProblem& p, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
