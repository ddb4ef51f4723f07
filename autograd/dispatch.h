// The one dispatch of the ops: the kernels of nd::cpu and nd::cuda share names and signatures
// (kernels/kernel_args.h), so an op writes each kernel call once, as backend::<kernel>(...), and
// ND_DISPATCH_KERNEL runs it with `backend` bound to the namespace of the tensor's device and
// `scalar_t` to the element type of its dtype (CPU: f32, f64 for the gradient checks, or f16
// through nd::cpu_f16, which emulates the GPU's f16 kernels with the f32 reference; CUDA: f32, bf16
// or f16). Any other dtype, or a CUDA tensor in a build without CUDA, is an nd::Error. Under
// --op-times the op timer (tensor/op_timer.h) times each call as `what`.
#pragma once
#include "autograd/variable.h"
#include "kernels/cpu/f16_emulation.h"
#include "kernels/kernel_args.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/op_timer.h"

#if NANODIST_WITH_CUDA
#define ND_DISPATCH_CUDA_FLOAT_(dtype, what, ...) \
  ND_DISPATCH_F32_OR2(dtype, ::nd::DType::BF16, ::nd::bf16, ::nd::DType::F16, ::nd::f16, "CUDA", what, __VA_ARGS__)
#else
#define ND_DISPATCH_CUDA_FLOAT_(dtype, what, ...) ND_FAIL(what << ": this nanodist was built without CUDA")
#endif

#define ND_DISPATCH_KERNEL(tensor, what, ...)                                                       \
  do {                                                                                              \
    const ::nd::Tensor& nd_dispatch_tensor_ = (tensor);                                             \
    ::nd::op_timer::Scope nd_op_timer_scope_(what, nd_dispatch_tensor_);                             \
    if (nd_dispatch_tensor_.device().is_cuda()) {                                                   \
      namespace backend = ::nd::cuda;                                                               \
      ND_DISPATCH_CUDA_FLOAT_(nd_dispatch_tensor_.dtype(), what, __VA_ARGS__);                      \
    } else if (nd_dispatch_tensor_.dtype() == ::nd::DType::F16) {                                   \
      namespace backend = ::nd::cpu_f16;                                                            \
      using scalar_t = ::nd::f16;                                                                   \
      __VA_ARGS__;                                                                                  \
    } else {                                                                                        \
      namespace backend = ::nd::cpu;                                                                \
      ND_DISPATCH_F32_OR(nd_dispatch_tensor_.dtype(), ::nd::DType::F64, double, "the CPU", what, __VA_ARGS__); \
    }                                                                                               \
  } while (0)

namespace nd::ops {

// A gradient slot as the kernels take it.
template <typename T>
GradDest<T> grad_dest(const GradSlot& slot) {
  return {slot.wanted() ? slot.buffer.data<T>() : nullptr, slot.accumulate};
}

// The dtype of the per-row statistics a forward saves for a `dtype` input (StatType).
inline DType stat_dtype(DType dtype) { return dtype == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace nd::ops
