// The one matrix-multiply entry point of the CUDA backend: cuBLASLt with one handle and one 32 MiB
// workspace per device, and the chosen algorithm cached per problem shape (no heuristic query in
// the steady state). f32 runs in true f32 (no TF32), so it can match the CPU reference; bf16 and
// f16 run on tensor cores with f32 accumulation. Epilogues fuse a bias, or GPT-2's GELU and its gradient.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/fp8_format.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// What the GEMM does to its product P = op(A) · op(B) (+ beta · D) before writing D.
enum class GemmEpilogue {
  Plain,    // D = P (+ bias on every column where bias is set)
  GeluAux,  // aux = P (+ bias), D = gelu(aux): cuBLASLt's GELU_AUX(_BIAS), the forward of a linear + GELU
};

// Column-major, as BLAS: D (m, n) = op(A) (m, k) · op(B) (k, n) + beta · D, then the epilogue,
// accumulated in f32. A and B have one type, D (and bias and aux) its own: F32, or BF16 (F16) inputs
// with a BF16 (F16) or F32 output (an f32 D with beta = 1 accumulates a 16-bit product into f32, as
// main gradients want). aux is (m, n) with leading dimension ldaux, which cuBLASLt wants a multiple of
// 8; bias is (m). The GELU epilogue takes beta = 0.
// Scales (device pointers to one f32 each, or null) are cuBLASLt's per-tensor scaling of FP8
// inputs (D = (scale_a · A)(scale_b · B)): with fp8 set, A and B are codes of a_format and
// b_format (kernels/fp8_format.h; not both E5M2), a_scale and b_scale are required and are the
// dequantisation factors (1 / the quantise's scales), D is BF16 or F32 and unscaled (d_scale stays
// null), accumulation is f32, and the layout must be TN, Hopper's only FP8 layout: trans_a set,
// trans_b not (both operands stored with k contiguous), lda and ldb multiples of 16. Outside FP8
// the scales are refused, so a caller cannot set one by mistake.
struct GemmProblem {
  DType a_type = DType::F32;  // A's and B's
  DType d_type = DType::F32;
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  const float* d_scale = nullptr;
  bool fp8 = false;
  Fp8Format a_format = Fp8Format::E4M3, b_format = Fp8Format::E4M3;
  // FP8 only: keep the tensor cores' own accumulator over all of k instead of promoting partial
  // sums to f32 (CUBLASLT_MATMUL_DESC_FAST_ACCUM): faster, about 14 mantissa bits per sum.
  // Transformer Engine's choice for forward GEMMs; gradients keep the promotion.
  bool fast_accum = false;
  void set_type(DType t) { a_type = d_type = t; }
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
