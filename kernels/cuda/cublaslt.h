// The one matrix-multiply entry point of the CUDA backend: cuBLASLt with one handle and one 32 MiB
// workspace per device, and the chosen algorithm cached per problem shape (no heuristic query in
// the steady state). f32 runs in true f32 (no TF32), so it can match the CPU reference; bf16 runs
// on tensor cores with f32 accumulation. Epilogues fuse a bias, or GPT-2's GELU and its gradient.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// What the GEMM does to its product P = op(A) · op(B) (+ beta · D) before writing D.
enum class GemmEpilogue {
  Plain,    // D = P (+ bias on every column where bias is set)
  GeluAux,  // aux = P (+ bias), D = gelu(aux): cuBLASLt's GELU_AUX(_BIAS), the forward of a linear + GELU
};

// Column-major, as BLAS: D (m, n) = op(A) (m, k) · op(B) (k, n) + beta · D, then the epilogue. A, B,
// D, bias and aux share `dtype` (F32 or BF16). aux is (m, n) with leading dimension ldaux, which
// cuBLASLt wants a multiple of 8; bias is (m). The GELU epilogue takes beta = 0.
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
  GemmEpilogue epilogue = GemmEpilogue::Plain;
  void* aux = nullptr;  // GeluAux: written
  int64_t ldaux = 0;
};

// Runs the product; an nd::Error when cuBLASLt has no algorithm for it.
void gemm(const GemmProblem& p, cudaStream_t stream = nullptr);

// Runs the product and returns true, or runs nothing and returns false when cuBLASLt has no
// algorithm for its epilogue at this type, layout and alignment (or ldaux breaks cuBLASLt's rule),
// so the caller can fall back to separate kernels. The answer is cached with the plan.
bool try_gemm(const GemmProblem& p, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
