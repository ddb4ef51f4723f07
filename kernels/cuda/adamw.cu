// Multi-tensor AdamW: grid (blocks, slots); each block strides over its slot's elements.
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/common.cuh"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocksPerSlot = 256;

template <typename T>
__global__ void adamw_kernel(const AdamWSlot<T>* slots, float lr, float beta1, float beta2, float eps,
                             float bias1, float sqrt_bias2, const float* grad_scale) {
  AdamWSlot<T> s = slots[blockIdx.y];
  float scale = grad_scale ? *grad_scale : 1.0f;
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

}  // namespace

template <typename T>
void adamw_update(const DeviceSlots<AdamWSlot<T>>& slots, const AdamWHyper& h, const float* grad_scale,
                  cudaStream_t stream) {
  ND_CHECK(h.step >= 1, "adamw_update: step " << h.step << " must be >= 1");
  ND_CHECK(h.beta1 >= 0 && h.beta1 < 1 && h.beta2 >= 0 && h.beta2 < 1,
           "adamw_update: betas (" << h.beta1 << ", " << h.beta2 << ") must lie in [0, 1)");
  ND_CHECK(slots.count() < 65536, "adamw_update: " << slots.count() << " tensors is too many for one launch");
  if (slots.count() == 0 || slots.max_n() == 0) return;
  double bias1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step));
  double bias2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step));
  int64_t blocks = std::min<int64_t>(ceil_div(slots.max_n(), kThreads), kMaxBlocksPerSlot);
  dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(slots.count()));
  adamw_kernel<T><<<grid, kThreads, 0, stream_or_default(stream)>>>(
      slots.data(), h.lr, h.beta1, h.beta2, h.eps, static_cast<float>(bias1),
      static_cast<float>(std::sqrt(bias2)), grad_scale);
  CUDA_CHECK(cudaGetLastError());
}

template void adamw_update<float>(const DeviceSlots<AdamWSlot<float>>&, const AdamWHyper&, const float*,
                                  cudaStream_t);
template void adamw_update<nd::bf16>(const DeviceSlots<AdamWSlot<nd::bf16>>&, const AdamWHyper&, const float*,
                                     cudaStream_t);

}  // namespace nd::cuda
