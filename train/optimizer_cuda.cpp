// The optimizer on the GPU: the global norm, the clip factor and the fused AdamW update all stay
// on the device (kernels/cuda multi-tensor kernels); the host reads back only the norm, for the
// log line. Under tensor parallelism the sharded gradients' sum of squares is all-reduced over the
// group on the device (stream-ordered, no host wait) and the replicated ones count once. The kernels' lists of tensors are uploaded once and reused while no address changes.
// lr and the bias corrections go to the device before the kernels (one small copy from pinned
// memory), so the kernel launches alone can be captured into a CUDA graph and replayed.
#include "train/optimizer_dispatch.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "dist/comm.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/global_norm.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {

#if NANODIST_WITH_CUDA

// The kernels' device-resident tensor lists for parameters of element type T.
template <typename T>
struct LaunchLists {
  cuda::DeviceSlots<cuda::NormSlot<T>> norm;
  cuda::DeviceSlots<cuda::AdamWSlot<T>> adamw;
};

struct DeviceOptimizerState {
  std::vector<const void*> key;  // parameter, gradient and state addresses the lists were built from
  std::unique_ptr<LaunchLists<float>> f32_lists;  // the one of the parameters' type is set
  std::unique_ptr<LaunchLists<bf16>> bf16_lists;
  // f32 (4) on the device: the norm, the clip factor, and the sums of squares of the sharded and
  // of the replicated gradients (tensor parallelism only).
  Tensor scalars;
  Tensor step_scalars;  // one cuda::AdamWStepScalars on the device, read by the AdamW kernel
  std::shared_ptr<cuda::AdamWStepScalars> staged;  // pinned host copy it is uploaded from
};

namespace {

// The states that take part in this step: those with a gradient, the sharded ones first when the
// norm is split over a tensor-parallel group (see split_of).
std::vector<const ParamState*> with_grad(const std::vector<ParamState>& states, bool sharded_first = false) {
  std::vector<const ParamState*> out;
  for (int pass = sharded_first ? 0 : 1; pass < 2; ++pass)
    for (const ParamState& s : states)
      if (s.param.has_grad() && (!sharded_first || s.sharded == (pass == 0))) out.push_back(&s);
  return out;
}

// How many of `active` (sharded first) are sharded.
int split_of(const std::vector<const ParamState*>& active) {
  int n = 0;
  while (n < static_cast<int>(active.size()) && active[n]->sharded) ++n;
  return n;
}

// norm (scalars[0]) and clip factor (scalars[1]) of the gradients in `slots`. With a tensor-parallel
// group `tp` the first `split` slots are sharded: their sum of squares (scalars[2]) is summed over
// the group by the comm (stream-ordered on the compute stream), the rest (scalars[3]) counts once.
template <typename T>
void enqueue_norm(const cuda::DeviceSlots<cuda::NormSlot<T>>& slots, int split, dist::Comm* tp, Tensor& scalars,
                  float max_norm, cudaStream_t stream) {
  float* norm = scalars.data<float>();
  if (tp == nullptr) return cuda::global_norm<T>(slots, norm, norm + 1, max_norm, stream);
  cuda::sums_of_squares<T>(slots, split, norm + 2, stream);
  Tensor sharded_sum = scalars.narrow(2, 1);
  tp->allreduce(sharded_sum, dist::ReduceOp::Sum);
  cuda::norm_from_sums(norm + 2, norm, norm + 1, max_norm, stream);
}

template <typename T>
std::vector<cuda::NormSlot<T>> norm_slots(const std::vector<const ParamState*>& states) {
  std::vector<cuda::NormSlot<T>> slots;
  for (const ParamState* s : states) slots.push_back({s->param.grad().data<T>(), s->param.grad().numel()});
  return slots;
}

template <typename T>
std::vector<cuda::AdamWSlot<T>> adamw_slots(const std::vector<const ParamState*>& states, float weight_decay) {
  std::vector<cuda::AdamWSlot<T>> slots;
  for (const ParamState* s : states) {
    float* master = s->master.defined() ? s->master.data<float>() : nullptr;
    slots.push_back({s->param.data().data<T>(), s->param.grad().data<T>(), master, s->m.data<float>(),
                     s->v.data<float>(), s->param.data().numel(), s->decay ? weight_decay : 0.0f});
  }
  return slots;
}

std::unique_ptr<LaunchLists<float>>& lists_of(DeviceOptimizerState& s, float*) { return s.f32_lists; }
std::unique_ptr<LaunchLists<bf16>>& lists_of(DeviceOptimizerState& s, bf16*) { return s.bf16_lists; }

template <typename T>
LaunchLists<T>& lists(DeviceOptimizerState& s) {
  return *lists_of(s, static_cast<T*>(nullptr));
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

std::shared_ptr<cuda::AdamWStepScalars> pinned_step_scalars() {
  void* host = nullptr;
  CUDA_CHECK(cudaHostAlloc(&host, sizeof(cuda::AdamWStepScalars), cudaHostAllocDefault));
  return std::shared_ptr<cuda::AdamWStepScalars>(static_cast<cuda::AdamWStepScalars*>(host),
                                                 [](cuda::AdamWStepScalars* p) { cudaFreeHost(p); });
}

// The launch data for the current addresses, rebuilt (uploads: not capturable) when one changed.
template <typename T>
DeviceOptimizerState& launch_state(const std::vector<const ParamState*>& active, float weight_decay,
                                   std::shared_ptr<DeviceOptimizerState>& state, bool* rebuilt = nullptr) {
  if (rebuilt) *rebuilt = false;
  int device = active.front()->param.device().index;
  std::vector<const void*> key = addresses(active);
  if (!state || state->key != key) {
    auto fresh = std::make_shared<DeviceOptimizerState>();
    fresh->key = key;
    lists_of(*fresh, static_cast<T*>(nullptr)).reset(
        new LaunchLists<T>{{norm_slots<T>(active), device}, {adamw_slots<T>(active, weight_decay), device}});
    fresh->scalars = Tensor::zeros({4}, DType::F32, Device::cuda(device));
    fresh->step_scalars = Tensor::zeros({sizeof(cuda::AdamWStepScalars) / sizeof(float)}, DType::F32,
                                        Device::cuda(device));
    fresh->staged = state && state->staged ? state->staged : pinned_step_scalars();
    state = fresh;
    if (rebuilt) *rebuilt = true;
  }
  return *state;
}

void upload_step_scalars(DeviceOptimizerState& s, const AdamWHyper& h, cudaStream_t stream) {
  // The previous step's upload finished: every step ends by reading its norm back.
  *s.staged = cuda::adamw_step_scalars(h.lr, h.beta1, h.beta2, h.step);
  CUDA_CHECK(cudaMemcpyAsync(s.step_scalars.raw_data(), s.staged.get(), sizeof(cuda::AdamWStepScalars),
                             cudaMemcpyHostToDevice, stream));
}

template <typename T>
void upload_step_scalars_as(const std::vector<ParamState>& states, const AdamWHyper& h, dist::Comm* tp,
                            std::shared_ptr<DeviceOptimizerState>& state) {
  std::vector<const ParamState*> active = with_grad(states, splits_norm(states, tp));
  if (active.empty()) return;
  DeviceOptimizerState& s = launch_state<T>(active, h.weight_decay, state);
  upload_step_scalars(s, h, compute_stream(active.front()->param.device().index));
}

template <typename T>
void enqueue_update_as(const std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip, dist::Comm* tp,
                       std::shared_ptr<DeviceOptimizerState>& state) {
  const bool split = splits_norm(states, tp);
  std::vector<const ParamState*> active = with_grad(states, split);
  if (active.empty()) return;
  bool rebuilt = false;
  DeviceOptimizerState& s = launch_state<T>(active, h.weight_decay, state, &rebuilt);
  cudaStream_t stream = compute_stream(active.front()->param.device().index);
  // New launch data (the first step, whose gradients did not exist at the upload, or moved
  // tensors) holds no step scalars yet. Never the case inside capture: the addresses are settled.
  if (rebuilt) upload_step_scalars(s, h, stream);
  enqueue_norm<T>(lists<T>(s).norm, split_of(active), split ? tp : nullptr, s.scalars, static_cast<float>(grad_clip),
                  stream);
  const float* scale = s.scalars.data<float>() + 1;
  cuda::adamw_update<T>(lists<T>(s).adamw, h.beta1, h.beta2, h.eps,
                        static_cast<const cuda::AdamWStepScalars*>(s.step_scalars.raw_data()), scale, stream);
}

bool is_bf16(const std::vector<ParamState>& states) {
  return !states.empty() && states.front().param.dtype() == DType::BF16;
}

template <typename T>
double global_norm_as(const std::vector<ParamState>& states, dist::Comm* tp) {
  const bool split = splits_norm(states, tp);
  std::vector<const ParamState*> active = with_grad(states, split);
  if (active.empty()) return 0.0;
  int device = states.front().param.device().index;
  cuda::DeviceSlots<cuda::NormSlot<T>> slots(norm_slots<T>(active), device);
  Tensor scalars = Tensor::zeros({4}, DType::F32, Device::cuda(device));
  cudaStream_t stream = compute_stream(device);
  enqueue_norm<T>(slots, split_of(active), split ? tp : nullptr, scalars, 0.0f, stream);
  return read_back(scalars.data<float>(), stream);
}

}  // namespace

double cuda_global_grad_norm(const std::vector<ParamState>& states, dist::Comm* tp) {
  if (is_bf16(states)) return global_norm_as<bf16>(states, tp);
  return global_norm_as<float>(states, tp);
}

void cuda_upload_step_scalars(const std::vector<ParamState>& states, const AdamWHyper& h, dist::Comm* tp,
                              std::shared_ptr<DeviceOptimizerState>& device_state) {
  for (const ParamState& s : states)
    ND_CHECK(s.param.dtype() == states.front().param.dtype(),
             "AdamW on the GPU needs one parameter dtype, got " << dtype_name(s.param.dtype()) << " and "
                                                                << dtype_name(states.front().param.dtype()));
  if (is_bf16(states)) return upload_step_scalars_as<bf16>(states, h, tp, device_state);
  upload_step_scalars_as<float>(states, h, tp, device_state);
}

void cuda_enqueue_clip_and_update(std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip,
                                  dist::Comm* tp, std::shared_ptr<DeviceOptimizerState>& device_state) {
  if (is_bf16(states)) return enqueue_update_as<bf16>(states, h, grad_clip, tp, device_state);
  enqueue_update_as<float>(states, h, grad_clip, tp, device_state);
}

double cuda_read_grad_norm(const std::vector<ParamState>& states,
                           const std::shared_ptr<DeviceOptimizerState>& device_state) {
  if (with_grad(states).empty() || !device_state) return 0.0;
  int device = states.front().param.device().index;
  return read_back(device_state->scalars.data<float>(), compute_stream(device));
}

double cuda_clip_and_update(std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip, dist::Comm* tp,
                            std::shared_ptr<DeviceOptimizerState>& device_state) {
  cuda_upload_step_scalars(states, h, tp, device_state);
  cuda_enqueue_clip_and_update(states, h, grad_clip, tp, device_state);
  return cuda_read_grad_norm(states, device_state);
}

#else

struct DeviceOptimizerState {};

double cuda_global_grad_norm(const std::vector<ParamState>&, dist::Comm*) { ND_FAIL("this nanodist was built without CUDA"); }

double cuda_clip_and_update(std::vector<ParamState>&, const AdamWHyper&, double, dist::Comm*,
                            std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

void cuda_upload_step_scalars(const std::vector<ParamState>&, const AdamWHyper&, dist::Comm*,
                              std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

void cuda_enqueue_clip_and_update(std::vector<ParamState>&, const AdamWHyper&, double, dist::Comm*,
                                  std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

double cuda_read_grad_norm(const std::vector<ParamState>&, const std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

#endif

}  // namespace nd::train
