// unscale_grads (unscale_grads.h) on the CPU and the GPU.
#include "train/unscale_grads.h"

#include "kernels/cpu/reduce.h"
#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/scale_by_device_scalar.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {

void unscale_grads(Tensor& grads, const Tensor& inverse_scale) {
  ND_CHECK(inverse_scale.dtype() == DType::F32 && inverse_scale.numel() == 1 &&
               inverse_scale.device() == grads.device(),
           "unscale_grads: the inverse scale must be one f32 on the gradients' device");
  ND_CHECK(grads.dtype() == DType::F32 || grads.dtype() == DType::BF16 || grads.dtype() == DType::F16,
           "unscale_grads: gradients in " << dtype_name(grads.dtype()));
  const int64_t n = grads.numel();
  if (grads.device().is_cuda()) {
#if NANODIST_WITH_CUDA
    cudaStream_t stream = compute_stream(grads.device().index);
    if (grads.dtype() == DType::F32)
      cuda::scale_by_device_scalar(grads.data<float>(), n, inverse_scale.data<float>(), stream);
    else if (grads.dtype() == DType::F16)
      cuda::scale_by_device_scalar(grads.data<f16>(), n, inverse_scale.data<float>(), stream);
    else
      cuda::scale_by_device_scalar(grads.data<bf16>(), n, inverse_scale.data<float>(), stream);
    return;
#else
    ND_FAIL("this nanodist was built without CUDA");
#endif
  }
  const float factor = *inverse_scale.data<float>();
  if (grads.dtype() == DType::F32)
    cpu::scale_inplace(grads.data<float>(), n, factor);
  else if (grads.dtype() == DType::F16)
    cpu::scale_inplace(grads.data<f16>(), n, factor);
  else
    cpu::scale_inplace(grads.data<bf16>(), n, factor);
}

}  // namespace nd::train
