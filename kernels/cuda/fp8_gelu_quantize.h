// The FP8 quantises of an MLP's GELU output and GELU-input gradient with the GELU applied on the
// way (nn::MLP under FP8, autograd/ops/fp8_gelu_mlp.h): the bf16 tensor the unfused GELU writes,
// and that is read back only to be quantised, is never written. The codes equal those of the
// unfused kernels (cuda::gelu_forward / gelu_backward to bf16, then fp8_quantize_transpose) bit for
// bit, and so does the amax.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "kernels/fp8_format.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype.h"

namespace nd::cuda {

// y = bf16(gelu(h)) for h (rows, cols) -> codes (rows, cols) and/or codes_t (cols, rows) of
// fp8(y * scale[0]) (either may be null, not both); *amax = max(*amax, max |y|); scale_inv (or
// null) receives 1 / scale[0]. Needs cols % 8 == 0, rows % 4 == 0, h 16-byte, codes 8-byte and
// codes_t 4-byte aligned (nd::Error otherwise): what an FP8 linear's shapes and fresh buffers have.
void fp8_gelu_quantize_transpose(const bf16* h, int64_t rows, int64_t cols, const float* scale, Fp8Format format,
                                 uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv,
                                 cudaStream_t stream = nullptr);

// dh = bf16(gelu'(h) * dg) for dg, h (rows, cols) -> codes and/or codes_t of fp8(dh * scale[0]),
// the amax and scale_inv as above; and db (cols) (+)= the column sums of dh (f32 partial sums per
// 64-row tile, then the tiles in order; db.ptr null: none). The same requirements, dg as h.
void fp8_dgelu_quantize_transpose(const bf16* dg, const bf16* h, int64_t rows, int64_t cols, const float* scale,
                                  Fp8Format format, uint8_t* codes, uint8_t* codes_t, float* amax, float* scale_inv,
                                  GradDest<bf16> db, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
