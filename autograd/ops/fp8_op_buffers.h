// Pieces the FP8 ops (fp8_linear.cpp, fp8_gelu_mlp.cpp) share on the GPU: code buffers from the
// caching allocator, the scale slots of a linear's scalars (fp8_linear.h's layout) and gradient
// destinations. Included only where NANODIST_WITH_CUDA.
#pragma once
#include "autograd/ops/fp8_linear.h"
#include "autograd/variable.h"
#include "kernels/cuda/fp8_linear.h"

namespace nd::ops::fp8_op {

// A device buffer of n bytes (FP8 codes) from the caching allocator.
inline Tensor code_buffer(int64_t n, Device device) { return Tensor::empty({(n + 3) / 4}, DType::I32, device); }
inline uint8_t* bytes(const Tensor& t) { return t.defined() ? static_cast<uint8_t*>(t.raw_data()) : nullptr; }

// The scale slots of one FP8 linear's scalars: x, w and the output's gradient.
struct Slots {
  cuda::Fp8ScaleSlot x, w, dout;
};

inline cuda::Fp8ScaleSlot slot_at(float* record) {
  return {record + kFp8Scale, record + kFp8Amax, record + kFp8ScaleInv};
}

inline Slots slots_of(const Tensor& scalars) {
  float* s = scalars.data<float>();
  return {slot_at(s), slot_at(s + kFp8TensorScalars), slot_at(s + 2 * kFp8TensorScalars)};
}

inline GradDest<bf16> dest(const GradSlot& slot) {
  return GradDest<bf16>{slot.wanted() ? slot.buffer.data<bf16>() : nullptr, slot.accumulate};
}

}  // namespace nd::ops::fp8_op
