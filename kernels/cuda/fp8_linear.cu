// The FP8 linear of fp8_linear.h: quantise(-and-transpose) kernels, then cuBLASLt FP8 GEMMs in the
// TN layout. In cuBLASLt's column-major view (row-major (R, C) is column-major (C, R)):
//   forward  out (N, M) = wᵀ-view: A = w codes stored (K, N), B = x codes stored (K, M), k = K;
//   dx       dx (K, M)  = A = w_t codes stored (N, K), B = dout codes stored (N, M), k = N;
//   dw       dw (K, N)  = A = x_t codes stored (M, K), B = dout_t codes stored (M, N), k = M.

#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/fp8_linear.h"
#include "kernels/cuda/fp8_quantize.h"

namespace nd::cuda {
namespace {

void check_fp8_dims(const char* what, int64_t M, int64_t N, int64_t K) {
  ND_CHECK(M >= 0 && N > 0 && K > 0, what << ": bad sizes M=" << M << " N=" << N << " K=" << K);
  ND_CHECK(M % 16 == 0 && N % 16 == 0 && K % 16 == 0,
           what << ": FP8 GEMMs need M, N and K multiples of 16, got M=" << M << " N=" << N << " K=" << K);
}

// D (m, n) = A(k, m)ᵀ · B(k, n), A of format fa scaled by *a_inv, B of fb by *b_inv; beta 0 or 1.
void fp8_gemm(bf16* D, bool accumulate, int64_t m, int64_t n, int64_t k, const uint8_t* A, Fp8Format fa,
              const float* a_inv, const uint8_t* B, Fp8Format fb, const float* b_inv, const bf16* bias,
              cudaStream_t stream, bool fast_accum = false) {
  GemmProblem p;
  p.fp8 = true;
  p.fast_accum = fast_accum;
  p.a_format = fa;
  p.b_format = fb;
  p.d_type = DType::BF16;
  p.trans_a = true;
  p.m = m, p.n = n, p.k = k;
  p.A = A, p.lda = k;
  p.B = B, p.ldb = k;
  p.D = D, p.ldd = m;
  p.a_scale = a_inv;
  p.b_scale = b_inv;
  p.beta = accumulate ? 1.0f : 0.0f;
  p.bias = bias;
  gemm(p, stream);
}

void check_backward(int64_t M, int64_t N, int64_t K, GradDest<bf16> dx, GradDest<bf16> dw,
                    const Fp8LinearBuffers& buf) {
  check_fp8_dims("fp8_linear_backward", M, N, K);
  // M = 0: x's and dout's codes are empty (their buffers may be null) and no GEMM reads them.
  ND_CHECK(M == 0 || ((!dx.ptr || (buf.w_t && buf.dout)) && (!dw.ptr || (buf.x_t && buf.dout_t))),
           "fp8_linear_backward: missing code buffers (dx needs w_t and dout, dw needs x_t and dout_t)");
}

}  // namespace

void fp8_linear_forward(const bf16* x, const bf16* w, const bf16* b, bf16* out, int64_t M, int64_t N, int64_t K,
                        const Fp8ScaleSlot& xs, const Fp8ScaleSlot& ws, const Fp8LinearBuffers& buf,
                        cudaStream_t stream) {
  // x's codes first, then the half that starts from them (which checks the buffers).
  check_fp8_dims("fp8_linear_forward", M, N, K);
  if (M > 0 && buf.x)
    fp8_quantize_transpose(x, M, K, xs.scale, Fp8Format::E4M3, buf.x, buf.x_t, xs.amax, xs.scale_inv,
                           stream_or_default(stream));
  fp8_linear_forward_from_codes(w, b, out, M, N, K, xs, ws, buf, stream);
}

void fp8_linear_forward_from_codes(const bf16* w, const bf16* b, bf16* out, int64_t M, int64_t N, int64_t K,
                                   const Fp8ScaleSlot& xs, const Fp8ScaleSlot& ws, const Fp8LinearBuffers& buf,
                                   cudaStream_t stream) {
  check_fp8_dims("fp8_linear_forward", M, N, K);
  if (M == 0) return;  // an empty output: nothing quantised (no amax recorded), no GEMM
  ND_CHECK(buf.x && buf.w, "fp8_linear_forward: missing code buffers");
  stream = stream_or_default(stream);
  fp8_quantize_transpose(w, N, K, ws.scale, Fp8Format::E4M3, buf.w, buf.w_t, ws.amax, ws.scale_inv, stream);
  // The forward accumulates in the tensor cores alone (GemmProblem::fast_accum), as Transformer
  // Engine's forward does; the backward GEMMs promote to f32.
  fp8_gemm(out, false, N, M, K, buf.w, Fp8Format::E4M3, ws.scale_inv, buf.x, Fp8Format::E4M3, xs.scale_inv, b, stream,
           /*fast_accum=*/true);
}

void fp8_linear_forward_saved_codes(const bf16* x, const bf16* w, int64_t M, int64_t N, int64_t K,
                                    const Fp8ScaleSlot& xs, const Fp8ScaleSlot& ws, const Fp8LinearBuffers& buf,
                                    cudaStream_t stream) {
  check_fp8_dims("fp8_linear_forward_saved_codes", M, N, K);
  ND_CHECK((!buf.x_t || x) && (!buf.w_t || w), "fp8_linear_forward_saved_codes: a transpose without its operand");
  if (M == 0) return;
  stream = stream_or_default(stream);
  if (buf.x_t)
    fp8_quantize_transpose(x, M, K, xs.scale, Fp8Format::E4M3, nullptr, buf.x_t, xs.amax, xs.scale_inv, stream);
  if (buf.w_t)
    fp8_quantize_transpose(w, N, K, ws.scale, Fp8Format::E4M3, nullptr, buf.w_t, ws.amax, ws.scale_inv, stream);
}

void fp8_linear_backward(const bf16* dout, GradDest<bf16> dx, GradDest<bf16> dw, GradDest<bf16> db, int64_t M,
                         int64_t N, int64_t K, const Fp8ScaleSlot& xs, const Fp8ScaleSlot& ws, const Fp8ScaleSlot& ds,
                         const Fp8LinearBuffers& buf, cudaStream_t stream) {
  check_backward(M, N, K, dx, dw, buf);
  stream = stream_or_default(stream);
  if (M == 0) {
    if (db.ptr && !db.accumulate) CUDA_CHECK(cudaMemsetAsync(db.ptr, 0, N * sizeof(bf16), stream));
  } else if (dx.ptr || dw.ptr) {
    fp8_quantize_transpose(dout, M, N, ds.scale, Fp8Format::E5M2, dx.ptr ? buf.dout : nullptr,
                           dw.ptr ? buf.dout_t : nullptr, ds.amax, ds.scale_inv, stream);
  }
  fp8_linear_backward_from_codes(dx, dw, M, N, K, xs, ws, ds, buf, stream);
  if (db.ptr && M > 0) row_sum_into(dout, db, M, N, stream);
}

void fp8_linear_backward_from_codes(GradDest<bf16> dx, GradDest<bf16> dw, int64_t M, int64_t N, int64_t K,
                                    const Fp8ScaleSlot& xs, const Fp8ScaleSlot& ws, const Fp8ScaleSlot& ds,
                                    const Fp8LinearBuffers& buf, cudaStream_t stream) {
  check_backward(M, N, K, dx, dw, buf);
  stream = stream_or_default(stream);
  if (M == 0) {
    if (dw.ptr && !dw.accumulate) CUDA_CHECK(cudaMemsetAsync(dw.ptr, 0, N * K * sizeof(bf16), stream));
    return;
  }
  if (dx.ptr)
    fp8_gemm(dx.ptr, dx.accumulate, K, M, N, buf.w_t, Fp8Format::E4M3, ws.scale_inv, buf.dout, Fp8Format::E5M2,
             ds.scale_inv, nullptr, stream);
  if (dw.ptr)
    fp8_gemm(dw.ptr, dw.accumulate, K, N, M, buf.x_t, Fp8Format::E4M3, xs.scale_inv, buf.dout_t, Fp8Format::E5M2,
             ds.scale_inv, nullptr, stream);
}

}  // namespace nd::cuda
