// The optimizer on the GPU: the global norm, the clip factor and the fused AdamW update all stay
// on the device (kernels/cuda multi-tensor kernels); the host reads back only the norm, for the
// log line. The kernels' lists of tensors are uploaded once and reused while no address changes.
#include "train/optimizer_dispatch.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/global_norm.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {

#if NANODIST_WITH_CUDA

struct DeviceOptimizerState {
  std::vector<const void*> key;  // parameter, gradient and state addresses the lists were built from
  std::shared_ptr<void> adamw_slots;
  std::shared_ptr<void> norm_slots;
  Tensor scalars;  // f32 (2) on the device: the norm and the clip factor
};

namespace {

// The states that take part in this step: those with a gradient.
std::vector<const ParamState*> with_grad(const std::vector<ParamState>& states) {
  std::vector<const ParamState*> out;
  for (const ParamState& s : states)
    if (s.param.has_grad()) out.push_back(&s);
  return out;
}

template <typename T>
std::shared_ptr<void> upload_norm_slots(const std::vector<const ParamState*>& states, int device) {
  std::vector<cuda::NormSlot<T>> slots;
  for (const ParamState* s : states) slots.push_back({s->param.grad().data<T>(), s->param.grad().numel()});
  return std::make_shared<cuda::DeviceSlots<cuda::NormSlot<T>>>(slots, device);
}

template <typename T>
std::shared_ptr<void> upload_adamw_slots(const std::vector<const ParamState*>& states, float weight_decay, int device) {
  std::vector<cuda::AdamWSlot<T>> slots;
  for (const ParamState* s : states) {
    float* master = s->master.defined() ? s->master.data<float>() : nullptr;
    slots.push_back({s->param.data().data<T>(), s->param.grad().data<T>(), master, s->m.data<float>(),
                     s->v.data<float>(), s->param.data().numel(), s->decay ? weight_decay : 0.0f});
  }
  return std::make_shared<cuda::DeviceSlots<cuda::AdamWSlot<T>>>(slots, device);
}

std::vector<const void*> addresses(const std::vector<const ParamState*>& states) {
  std::vector<const void*> key;
  for (const ParamState* s : states)
    key.insert(key.end(), {s->param.data().raw_data(), s->param.grad().raw_data(), s->m.raw_data()});
  return key;
}

float read_back(const float* device_value, cudaStream_t stream) {
  float host = 0.0f;
  CUDA_CHECK(cudaMemcpyAsync(&host, device_value, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

template <typename T>
double clip_and_update_as(std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip,
                          std::shared_ptr<DeviceOptimizerState>& state) {
  std::vector<const ParamState*> active = with_grad(states);
  if (active.empty()) return 0.0;
  int device = states.front().param.device().index;
  std::vector<const void*> key = addresses(active);
  if (!state || state->key != key) {
    state = std::make_shared<DeviceOptimizerState>();
    state->key = key;
    state->norm_slots = upload_norm_slots<T>(active, device);
    state->adamw_slots = upload_adamw_slots<T>(active, h.weight_decay, device);
    state->scalars = Tensor::zeros({2}, DType::F32, Device::cuda(device));
  }
  cudaStream_t stream = compute_stream(device);
  float* norm = state->scalars.data<float>();
  float* scale = norm + 1;
  cuda::global_norm<T>(*static_cast<cuda::DeviceSlots<cuda::NormSlot<T>>*>(state->norm_slots.get()), norm, scale,
                       static_cast<float>(grad_clip), stream);
  cuda::AdamWHyper hyper{h.lr, h.beta1, h.beta2, h.eps, h.step};
  cuda::adamw_update<T>(*static_cast<cuda::DeviceSlots<cuda::AdamWSlot<T>>*>(state->adamw_slots.get()), hyper, scale,
                        stream);
  return read_back(norm, stream);
}

template <typename T>
double global_norm_as(const std::vector<ParamState>& states) {
  std::vector<const ParamState*> active = with_grad(states);
  if (active.empty()) return 0.0;
  int device = states.front().param.device().index;
  std::shared_ptr<void> slots = upload_norm_slots<T>(active, device);
  Tensor norm = Tensor::zeros({1}, DType::F32, Device::cuda(device));
  cudaStream_t stream = compute_stream(device);
  cuda::global_norm<T>(*static_cast<cuda::DeviceSlots<cuda::NormSlot<T>>*>(slots.get()), norm.data<float>(), nullptr,
                       0.0f, stream);
  return read_back(norm.data<float>(), stream);
}

}  // namespace

double cuda_global_grad_norm(const std::vector<ParamState>& states) {
  if (!states.empty() && states.front().param.dtype() == DType::BF16) return global_norm_as<bf16>(states);
  return global_norm_as<float>(states);
}

double cuda_clip_and_update(std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip,
                            std::shared_ptr<DeviceOptimizerState>& device_state) {
  for (const ParamState& s : states)
    ND_CHECK(s.param.dtype() == states.front().param.dtype(),
             "AdamW on the GPU needs one parameter dtype, got " << dtype_name(s.param.dtype()) << " and "
                                                                << dtype_name(states.front().param.dtype()));
  if (!states.empty() && states.front().param.dtype() == DType::BF16)
    return clip_and_update_as<bf16>(states, h, grad_clip, device_state);
  return clip_and_update_as<float>(states, h, grad_clip, device_state);
}

#else

struct DeviceOptimizerState {};

double cuda_global_grad_norm(const std::vector<ParamState>&) { ND_FAIL("this nanodist was built without CUDA"); }

double cuda_clip_and_update(std::vector<ParamState>&, const AdamWHyper&, double, std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

#endif

}  // namespace nd::train
