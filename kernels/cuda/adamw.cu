// Multi-tensor AdamW: grid (blocks, slots); each block strides over its slot's elements. The
// per-step scalars (lr, bias corrections) come from device memory so a CUDA graph can replay it.
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/common.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocksPerSlot = 256;

template <typename T, typename G>
__global__ void adamw_kernel(const AdamWSlot<T, G>* slots, float beta1, float beta2, float eps,
                             const AdamWStepScalars* step_scalars, const float* grad_scale) {
  AdamWSlot<T, G> s = slots[blockIdx.y];
  const float lr = step_scalars->lr, bias1 = step_scalars->bias1, sqrt_bias2 = step_scalars->sqrt_bias2;
  float scale = grad_scale ? *grad_scale : 1.0f;
  if (!isfinite(scale)) return;  // a non-finite gradient norm: the update is dropped
  float decay = 1.0f - lr * s.weight_decay;
  float step_size = lr / bias1;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < s.n; i += stride) {
    float w = s.master ? s.master[i] : to_f32(s.param[i]);
    w *= decay;
    float g = to_f32(s.grad[i]) * scale;
    float m = s.m[i];
    m += (1.0f - beta1) * (g - m);
    float v = beta2 * s.v[i] + (1.0f - beta2) * g * g;
    w -= step_size * m / (sqrtf(v) / sqrt_bias2 + eps);
    s.m[i] = m;
    s.v[i] = v;
    if (s.master) s.master[i] = w;
    s.param[i] = from_f32<T>(w);
  }
}

void check_betas(float beta1, float beta2) {
  ND_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1,
           "adamw_update: betas (" << beta1 << ", " << beta2 << ") must lie in [0, 1)");
}

}  // namespace

AdamWStepScalars adamw_step_scalars(float lr, float beta1, float beta2, int64_t step) {
  ND_CHECK(step >= 1, "adamw_update: step " << step << " must be >= 1");
  check_betas(beta1, beta2);
  double bias1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  double bias2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  return {lr, static_cast<float>(bias1), static_cast<float>(std::sqrt(bias2))};
}

template <typename T, typename G>
void adamw_update(const DeviceSlots<AdamWSlot<T, G>>& slots, float beta1, float beta2, float eps,
                  const AdamWStepScalars* step_scalars, const float* grad_scale, cudaStream_t stream) {
  check_betas(beta1, beta2);
  ND_CHECK(step_scalars != nullptr, "adamw_update: no step scalars");
  ND_CHECK(slots.count() < 65536, "adamw_update: " << slots.count() << " tensors is too many for one launch");
  if (slots.count() == 0 || slots.max_n() == 0) return;
  int64_t blocks = std::min<int64_t>(ceil_div(slots.max_n(), kThreads), kMaxBlocksPerSlot);
  dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(slots.count()));
  adamw_kernel<T, G><<<grid, kThreads, 0, stream_or_default(stream)>>>(slots.data(), beta1, beta2, eps, step_scalars,
                                                                    grad_scale);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename G>
void adamw_update(const DeviceSlots<AdamWSlot<T, G>>& slots, const AdamWHyper& h, const float* grad_scale,
                  cudaStream_t stream) {
  AdamWStepScalars host = adamw_step_scalars(h.lr, h.beta1, h.beta2, h.step);
  if (slots.count() == 0 || slots.max_n() == 0) return;
  stream = stream_or_default(stream);
  int device = current_cuda_device();
  auto* scalars = static_cast<AdamWStepScalars*>(device_alloc(sizeof(AdamWStepScalars), device));
  // From pageable memory: the copy has taken `host` before the call returns.
  CUDA_CHECK(cudaMemcpyAsync(scalars, &host, sizeof(host), cudaMemcpyHostToDevice, stream));
  adamw_update<T, G>(slots, h.beta1, h.beta2, h.eps, scalars, grad_scale, stream);
  device_free(scalars, device);  // reused only by later work on this stream
}

template void adamw_update<float, float>(const DeviceSlots<AdamWSlot<float>>&, const AdamWHyper&, const float*,
                                         cudaStream_t);
template void adamw_update<nd::bf16, nd::bf16>(const DeviceSlots<AdamWSlot<nd::bf16>>&, const AdamWHyper&,
                                               const float*, cudaStream_t);
template void adamw_update<nd::bf16, float>(const DeviceSlots<AdamWSlot<nd::bf16, float>>&, const AdamWHyper&,
                                            const float*, cudaStream_t);
template void adamw_update<float, float>(const DeviceSlots<AdamWSlot<float>>&, float, float, float,
                                         const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::bf16, nd::bf16>(const DeviceSlots<AdamWSlot<nd::bf16>>&, float, float, float,
                                               const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::bf16, float>(const DeviceSlots<AdamWSlot<nd::bf16, float>>&, float, float, float,
                                            const AdamWStepScalars*, const float*, cudaStream_t);

}  // namespace nd::cuda
