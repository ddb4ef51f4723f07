// A linear layer whose GEMMs run in FP8 on Hopper (Transformer Engine's recipe): out = x · wᵀ + b
// with x and w quantised to E4M3, and in backward dout quantised to E5M2; f32 accumulation, bf16
// inputs and outputs. The scales come from delayed scaling (nn/fp8_scaling.h): each operand's
// scale is read from device memory, its amax folded into device memory by the quantise, and its
// inverse written there for the GEMM. cuBLASLt's FP8 kernels take only the TN layout, so the
// forward also writes the transposed codes of x and w that backward's two GEMMs need (x's are
// what backward keeps of the input: one byte an element, not two).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// One quantised operand's device scalars.
struct Fp8ScaleSlot {
  const float* scale = nullptr;  // the quantise multiplies by it (read)
  float* amax = nullptr;         // max |value| folded in (the caller zeroes it once per step)
  float* scale_inv = nullptr;    // 1 / scale, written by the quantise, read by the GEMMs
};

// Device buffers of FP8 codes, one byte an element: x (M, K) and x_t (K, M), w (N, K) and w_t
// (K, N) written by forward; dout (M, N) and dout_t (N, M) written by backward. x_t, w_t and the
// scales' scale_inv must live from forward to backward. Only what is used need exist: x_t for dw,
// w_t for dx, dout for dx, dout_t for dw (a null transpose in forward is not written).
struct Fp8LinearBuffers {
  uint8_t *x = nullptr, *x_t = nullptr, *w = nullptr, *w_t = nullptr, *dout = nullptr, *dout_t = nullptr;
};

// x (M, K), w (N, K), b (N) or null -> out (M, N), writing x_t and w_t where they are not null.
// M, N and K must be multiples of 16 (FP8 GEMM alignment); nd::Error otherwise. M = 0 (no rows)
// is an empty output: nothing is quantised (no amax recorded) and no GEMM runs; its backward gives
// dw and db zero (or leaves an accumulated gradient as it was), and the code buffers of x and
// dout, being empty, may be null.
void fp8_linear_forward(const bf16* x, const bf16* w, const bf16* b, bf16* out, int64_t M, int64_t N, int64_t K,
                        const Fp8ScaleSlot& x_scale, const Fp8ScaleSlot& w_scale, const Fp8LinearBuffers& buffers,
                        cudaStream_t stream = nullptr);

// The forward past x's quantise, for a caller that wrote x's codes itself (ops::fp8_gelu_mlp, from
// the GELU): buffers.x (and x_t) hold them and x_scale's scale_inv is written; quantises w and runs
// the GEMM, as fp8_linear_forward does after its own quantise of x.
void fp8_linear_forward_from_codes(const bf16* w, const bf16* b, bf16* out, int64_t M, int64_t N, int64_t K,
                                   const Fp8ScaleSlot& x_scale, const Fp8ScaleSlot& w_scale,
                                   const Fp8LinearBuffers& buffers, cudaStream_t stream = nullptr);

// Only what backward keeps of the forward, for a linear whose output nobody reads (recorded without
// its forward, autograd/without_forward.h): x_t and/or w_t, where not null, as fp8_linear_forward
// writes them (the amaxes folded and scale_inv written alike: the same values fold the same
// maximum); no GEMM. x may be null without x_t, w without w_t.
void fp8_linear_forward_saved_codes(const bf16* x, const bf16* w, int64_t M, int64_t N, int64_t K,
                                    const Fp8ScaleSlot& x_scale, const Fp8ScaleSlot& w_scale,
                                    const Fp8LinearBuffers& buffers, cudaStream_t stream = nullptr);

// dout (M, N) -> dx (M, K) (+)= dout · w, dw (N, K) (+)= doutᵀ · x, db (N) (+)= column sums of dout
// (in bf16, not quantised), from forward's x_t and w_t codes and scales.
void fp8_linear_backward(const bf16* dout, GradDest<bf16> dx, GradDest<bf16> dw, GradDest<bf16> db, int64_t M,
                         int64_t N, int64_t K, const Fp8ScaleSlot& x_scale, const Fp8ScaleSlot& w_scale,
                         const Fp8ScaleSlot& dout_scale, const Fp8LinearBuffers& buffers, cudaStream_t stream = nullptr);

// The backward's two GEMMs alone, for a caller that wrote dout's codes itself (buffers.dout for dx,
// dout_t for dw; dout_scale's scale_inv written) and sums the bias gradient itself.
void fp8_linear_backward_from_codes(GradDest<bf16> dx, GradDest<bf16> dw, int64_t M, int64_t N, int64_t K,
                                    const Fp8ScaleSlot& x_scale, const Fp8ScaleSlot& w_scale,
                                    const Fp8ScaleSlot& dout_scale, const Fp8LinearBuffers& buffers,
                                    cudaStream_t stream = nullptr);

}  // namespace nd::cuda
