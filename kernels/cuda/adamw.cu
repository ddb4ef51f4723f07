// Multi-tensor AdamW: grid (slots, blocks); each block strides over its slot's elements in
// vector accesses. Callers balance the work by cutting long runs into slots of similar length. The
// per-step scalars (lr, bias corrections) come from device memory so a CUDA graph can replay it.
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/common.cuh"
#include "tensor/storage.h"

namespace nd::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPack = 4;               // elements per thread and iteration (one vector access each)
constexpr int kPacksPerThread = 16;    // blocks per slot = max_n / (threads x pack x this), capped
constexpr int kMaxBlocksPerSlot = 256;

// kPack elements of T read or written in one access (8 bytes for bf16 and f16, 16 for f32).
template <typename T>
struct alignas(kPack * sizeof(T)) Pack4 {
  T v[kPack];
};

__device__ __forceinline__ bool aligned_to(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

// One element's update: decoupled weight decay, then Adam with the bias corrections.
__device__ __forceinline__ float adamw_element(float w, float g, float& m, float& v, float decay, float beta1,
                                               float beta2, float eps, float step_size, float sqrt_bias2) {
  w *= decay;
  m += (1.0f - beta1) * (g - m);
  v = beta2 * v + (1.0f - beta2) * g * g;
  return w - step_size * m / (sqrtf(v) / sqrt_bias2 + eps);
}

// grid (slots, blocks per slot): the slot index on x, which has no 65535 limit. Each block strides
// over its slot by packs of kPack elements when every array of the slot is aligned for it, the
// tail and unaligned slots element by element.
template <typename T, typename G>
__global__ void adamw_kernel(const AdamWSlot<T, G>* slots, float beta1, float beta2, float eps,
                             const AdamWStepScalars* step_scalars, const float* grad_scale) {
  AdamWSlot<T, G> s = slots[blockIdx.x];
  const float lr = step_scalars->lr, bias1 = step_scalars->bias1, sqrt_bias2 = step_scalars->sqrt_bias2;
  float scale = grad_scale ? *grad_scale : 1.0f;
  if (!isfinite(scale)) return;  // a non-finite gradient norm: the update is dropped
  const float decay = 1.0f - lr * s.weight_decay;
  const float step_size = lr / bias1;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  const bool vec = aligned_to(s.param, sizeof(Pack4<T>)) && aligned_to(s.grad, sizeof(Pack4<G>)) &&
                   aligned_to(s.m, 16) && aligned_to(s.v, 16) && (!s.master || aligned_to(s.master, 16));
  const int64_t vector_end = vec ? s.n / kPack * kPack : 0;
  for (int64_t i = first * kPack; i < vector_end; i += stride * kPack) {
    Pack4<G> g = *reinterpret_cast<const Pack4<G>*>(s.grad + i);
    Pack4<float> m = *reinterpret_cast<const Pack4<float>*>(s.m + i);
    Pack4<float> v = *reinterpret_cast<const Pack4<float>*>(s.v + i);
    Pack4<float> w;
    if (s.master) {
      w = *reinterpret_cast<const Pack4<float>*>(s.master + i);
    } else {
      Pack4<T> p = *reinterpret_cast<const Pack4<T>*>(s.param + i);
#pragma unroll
      for (int k = 0; k < kPack; ++k) w.v[k] = to_f32(p.v[k]);
    }
    Pack4<T> out;
#pragma unroll
    for (int k = 0; k < kPack; ++k) {
      w.v[k] = adamw_element(w.v[k], to_f32(g.v[k]) * scale, m.v[k], v.v[k], decay, beta1, beta2, eps, step_size,
                             sqrt_bias2);
      out.v[k] = from_f32<T>(w.v[k]);
    }
    *reinterpret_cast<Pack4<float>*>(s.m + i) = m;
    *reinterpret_cast<Pack4<float>*>(s.v + i) = v;
    if (s.master) *reinterpret_cast<Pack4<float>*>(s.master + i) = w;
    *reinterpret_cast<Pack4<T>*>(s.param + i) = out;
  }
  for (int64_t i = vector_end + first; i < s.n; i += stride) {
    float w = s.master ? s.master[i] : to_f32(s.param[i]);
    float m = s.m[i], v = s.v[i];
    w = adamw_element(w, to_f32(s.grad[i]) * scale, m, v, decay, beta1, beta2, eps, step_size, sqrt_bias2);
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
  if (slots.count() == 0 || slots.max_n() == 0) return;
  int64_t blocks = std::min<int64_t>(ceil_div(slots.max_n(), int64_t{kThreads} * kPack * kPacksPerThread),
                                     kMaxBlocksPerSlot);
  dim3 grid(static_cast<unsigned>(slots.count()), static_cast<unsigned>(blocks));
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
template void adamw_update<nd::f16, nd::f16>(const DeviceSlots<AdamWSlot<nd::f16>>&, const AdamWHyper&,
                                             const float*, cudaStream_t);
template void adamw_update<nd::f16, float>(const DeviceSlots<AdamWSlot<nd::f16, float>>&, const AdamWHyper&,
                                           const float*, cudaStream_t);
template void adamw_update<float, float>(const DeviceSlots<AdamWSlot<float>>&, float, float, float,
                                         const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::bf16, nd::bf16>(const DeviceSlots<AdamWSlot<nd::bf16>>&, float, float, float,
                                               const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::bf16, float>(const DeviceSlots<AdamWSlot<nd::bf16, float>>&, float, float, float,
                                            const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::f16, nd::f16>(const DeviceSlots<AdamWSlot<nd::f16>>&, float, float, float,
                                             const AdamWStepScalars*, const float*, cudaStream_t);
template void adamw_update<nd::f16, float>(const DeviceSlots<AdamWSlot<nd::f16, float>>&, float, float, float,
                                           const AdamWStepScalars*, const float*, cudaStream_t);

}  // namespace nd::cuda
