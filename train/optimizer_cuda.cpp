// The optimizer on the GPU: the global norm, the clip factor and the fused AdamW update over the
// flat runs all stay on the device (kernels/cuda multi-tensor kernels, one slot per run); the host
// reads back only the norm, for the log line. Under tensor parallelism the sharded gradients' sum of squares is all-reduced over the
// group on the device (stream-ordered, no host wait) and the replicated ones count once. The kernels' lists of tensors are uploaded once and reused while no address changes.
// lr and the bias corrections go to the device before the kernels (one small copy from pinned
// memory), so the kernel launches alone can be captured into a CUDA graph and replayed.
#include "train/optimizer_dispatch.h"

#include <algorithm>

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "dist/comm/comm.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/global_norm.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {

#if NANODIST_WITH_CUDA

// The kernels' device-resident lists of runs for parameters of type T and gradients of type G.
template <typename T, typename G>
struct LaunchLists {
  cuda::DeviceSlots<cuda::NormSlot<G>> norm;
  cuda::DeviceSlots<cuda::AdamWSlot<T, G>> adamw;
};

struct DeviceOptimizerState {
  // The runs (begin, length, decay, sharded) and buffer addresses the lists were built from.
  std::vector<int64_t> key;
  std::shared_ptr<void> lists;  // a LaunchLists<T, G> of the buffers' types
  int sharded_runs = 0;         // the lists hold the sharded runs first
  // f32 (4) on the device: the norm, the clip factor, and the sums of squares of the sharded and
  // of the replicated gradients (tensor parallelism only).
  Tensor scalars;
  Tensor step_scalars;  // one cuda::AdamWStepScalars on the device, read by the AdamW kernel
  std::shared_ptr<cuda::AdamWStepScalars> staged;  // pinned host copy it is uploaded from
};

namespace {

// The runs with the sharded ones first when the norm is split over a tensor-parallel group.
std::vector<FlatRun> ordered(const std::vector<FlatRun>& runs, bool sharded_first) {
  if (!sharded_first) return runs;
  std::vector<FlatRun> out;
  for (int pass = 0; pass < 2; ++pass)
    for (const FlatRun& r : runs)
      if (r.sharded == (pass == 0)) out.push_back(r);
  return out;
}

// norm (scalars[0]) and clip factor (scalars[1]) of the gradients in `slots`. With a tensor-parallel
// group `tp` the first `split` slots are sharded: their sum of squares (scalars[2]) is summed over
// the group by the comm (stream-ordered on the compute stream), the rest (scalars[3]) counts once.
// Under ZeRO both sums are first summed over the data-parallel shards (`dp`).
template <typename G>
void enqueue_norm(const cuda::DeviceSlots<cuda::NormSlot<G>>& slots, int split, dist::Comm* tp, dist::Comm* dp,
                  Tensor& scalars, float max_norm, cudaStream_t stream) {
  float* norm = scalars.data<float>();
  if (dp != nullptr && dp->size() == 1) dp = nullptr;
  if (tp == nullptr && dp == nullptr) return cuda::global_norm<G>(slots, norm, norm + 1, max_norm, stream);
  cuda::sums_of_squares<G>(slots, split, norm + 2, stream);
  if (dp != nullptr) {
    Tensor sums = scalars.narrow(2, 2);
    dp->allreduce(sums, dist::ReduceOp::Sum);
  }
  Tensor sharded_sum = scalars.narrow(2, 1);
  if (tp != nullptr) tp->allreduce(sharded_sum, dist::ReduceOp::Sum);
  cuda::norm_from_sums(norm + 2, norm, norm + 1, max_norm, stream);
}

// The runs counted in the norm (sharded ones first when ordered so: the excluded sort last).
template <typename G>
std::vector<cuda::NormSlot<G>> norm_slots(const Tensor& grads, const std::vector<FlatRun>& runs) {
  std::vector<cuda::NormSlot<G>> slots;
  for (const FlatRun& r : runs)
    if (r.in_norm) slots.push_back({grads.data<G>() + r.grad, r.length});
  return slots;
}

// AdamW's slots: each run cut into pieces of at most kAdamWSlotElements, so that the kernel's
// blocks share the work evenly (one long run, such as the embedding's, would otherwise keep a few
// blocks busy after the rest are done). The length keeps every piece's start vector-aligned.
constexpr int64_t kAdamWSlotElements = 65536;

template <typename T, typename G>
std::vector<cuda::AdamWSlot<T, G>> adamw_slots(FlatOptimizerState& state,
                                               const std::vector<FlatRun>& runs, float weight_decay) {
  std::vector<cuda::AdamWSlot<T, G>> slots;
  for (const FlatRun& r : runs) {
    for (int64_t at = 0; at < r.length; at += kAdamWSlotElements) {
      const int64_t n = std::min(kAdamWSlotElements, r.length - at);
      float* master = state.master.defined() ? state.master.data<float>() + r.local + at : nullptr;
      slots.push_back({state.params.data<T>() + r.param + at, state.grads.data<G>() + r.grad + at, master,
                       state.m.data<float>() + r.local + at, state.v.data<float>() + r.local + at, n,
                       r.decay ? weight_decay : 0.0f});
    }
  }
  return slots;
}

std::vector<int64_t> key_of(const FlatOptimizerState& opt, const std::vector<FlatRun>& runs) {
  std::vector<int64_t> key{reinterpret_cast<int64_t>(opt.params.raw_data()),
                           reinterpret_cast<int64_t>(opt.grads.raw_data()),
                           reinterpret_cast<int64_t>(opt.m.raw_data())};
  for (const FlatRun& r : runs)
    key.insert(key.end(), {r.begin, r.length, r.decay ? 1 : 0, r.sharded ? 1 : 0, r.local, r.grad, r.in_norm ? 1 : 0, r.param});
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

// The launch data for the current runs and addresses, rebuilt (uploads: not capturable) when one
// changed.
template <typename T, typename G>
DeviceOptimizerState& launch_state(dist::FlatParams& flat, FlatOptimizerState& opt, const std::vector<FlatRun>& runs,
                                   float weight_decay, bool split, std::shared_ptr<DeviceOptimizerState>& state,
                                   bool* rebuilt = nullptr) {
  if (rebuilt) *rebuilt = false;
  const int device = flat.device().index;
  std::vector<FlatRun> active = ordered(runs, split);
  std::vector<int64_t> key = key_of(opt, active);
  if (!state || state->key != key) {
    auto fresh = std::make_shared<DeviceOptimizerState>();
    fresh->key = key;
    fresh->lists = std::shared_ptr<LaunchLists<T, G>>(new LaunchLists<T, G>{
        {norm_slots<G>(opt.grads, active), device}, {adamw_slots<T, G>(opt, active, weight_decay), device}});
    fresh->sharded_runs = 0;
    for (const FlatRun& r : active) fresh->sharded_runs += split && r.sharded && r.in_norm ? 1 : 0;
    fresh->scalars = Tensor::zeros({4}, DType::F32, Device::cuda(device));
    fresh->step_scalars = Tensor::zeros({sizeof(cuda::AdamWStepScalars) / sizeof(float)}, DType::F32,
                                        Device::cuda(device));
    fresh->staged = state && state->staged ? state->staged : pinned_step_scalars();
    state = fresh;
    if (rebuilt) *rebuilt = true;
  }
  return *state;
}

template <typename T, typename G>
LaunchLists<T, G>& lists(DeviceOptimizerState& s) {
  return *static_cast<LaunchLists<T, G>*>(s.lists.get());
}

void upload_step_scalars(DeviceOptimizerState& s, const AdamWHyper& h, cudaStream_t stream) {
  // The previous step's upload finished: every step ends by reading its norm back.
  *s.staged = cuda::adamw_step_scalars(h.lr, h.beta1, h.beta2, h.step);
  CUDA_CHECK(cudaMemcpyAsync(s.step_scalars.raw_data(), s.staged.get(), sizeof(cuda::AdamWStepScalars),
                             cudaMemcpyHostToDevice, stream));
}

template <typename T, typename G>
void enqueue_update_as(dist::FlatParams& flat, FlatOptimizerState& opt, const std::vector<FlatRun>& runs,
                       const AdamWHyper& h, double grad_clip, dist::Comm* tp,
                       std::shared_ptr<DeviceOptimizerState>& state, bool upload_only) {
  if (runs.empty()) return;
  const bool split = splits_norm(runs, tp);
  bool rebuilt = false;
  DeviceOptimizerState& s = launch_state<T, G>(flat, opt, runs, h.weight_decay, split, state, &rebuilt);
  cudaStream_t stream = compute_stream(flat.device().index);
  // New launch data (the first step, or moved buffers) holds no step scalars yet. Never the case
  // inside capture: the runs and addresses are settled.
  if (upload_only || rebuilt) upload_step_scalars(s, h, stream);
  if (upload_only) return;
  enqueue_norm<G>(lists<T, G>(s).norm, s.sharded_runs, split ? tp : nullptr, opt.shard_group, s.scalars,
                  static_cast<float>(grad_clip), stream);
  const float* scale = s.scalars.data<float>() + 1;
  cuda::adamw_update<T, G>(lists<T, G>(s).adamw, h.beta1, h.beta2, h.eps,
                           static_cast<const cuda::AdamWStepScalars*>(s.step_scalars.raw_data()), scale, stream);
}

// Runs `f.template operator()<T, G>()` for the flat buffers' parameter and gradient types.
template <typename F>
void with_types(dist::FlatParams& flat, const FlatOptimizerState& opt, F&& f) {
  const DType p = flat.param_dtype(), g = opt.grads.dtype();
  if (p == DType::F32 && g == DType::F32) return f(float{}, float{});
  if (p == DType::BF16 && g == DType::BF16) return f(bf16{}, bf16{});
  if (p == DType::BF16 && g == DType::F32) return f(bf16{}, float{});
  if (p == DType::F16 && g == DType::F16) return f(f16{}, f16{});
  if (p == DType::F16 && g == DType::F32) return f(f16{}, float{});
  ND_FAIL("AdamW on the GPU: " << dtype_name(p) << " parameters with " << dtype_name(g) << " gradients");
}

}  // namespace

double cuda_global_grad_norm(dist::FlatParams& flat, const FlatOptimizerState& opt, const std::vector<FlatRun>& runs,
                             dist::Comm* tp) {
  if (runs.empty()) return 0.0;
  const bool split = splits_norm(runs, tp);
  std::vector<FlatRun> active = ordered(runs, split);
  int sharded = 0;
  for (const FlatRun& r : active) sharded += split && r.sharded && r.in_norm ? 1 : 0;
  const int device = flat.device().index;
  Tensor scalars = Tensor::zeros({4}, DType::F32, Device::cuda(device));
  cudaStream_t stream = compute_stream(device);
  auto norm_of = [&](auto g) {
    using G = decltype(g);
    cuda::DeviceSlots<cuda::NormSlot<G>> slots(norm_slots<G>(opt.grads, active), device);
    enqueue_norm<G>(slots, sharded, split ? tp : nullptr, opt.shard_group, scalars, 0.0f, stream);
  };
  if (opt.grads.dtype() == DType::BF16)
    norm_of(bf16{});
  else if (opt.grads.dtype() == DType::F16)
    norm_of(f16{});
  else
    norm_of(float{});
  return read_back(scalars.data<float>(), stream);
}

void cuda_upload_step_scalars(dist::FlatParams& flat, FlatOptimizerState& opt, const std::vector<FlatRun>& runs,
                              const AdamWHyper& h, dist::Comm* tp, std::shared_ptr<DeviceOptimizerState>& state) {
  with_types(flat, opt, [&](auto t, auto g) {
    enqueue_update_as<decltype(t), decltype(g)>(flat, opt, runs, h, 0.0, tp, state, /*upload_only=*/true);
  });
}

void cuda_enqueue_clip_and_update(dist::FlatParams& flat, FlatOptimizerState& opt, const std::vector<FlatRun>& runs,
                                  const AdamWHyper& h, double grad_clip, dist::Comm* tp,
                                  std::shared_ptr<DeviceOptimizerState>& state) {
  with_types(flat, opt, [&](auto t, auto g) {
    enqueue_update_as<decltype(t), decltype(g)>(flat, opt, runs, h, grad_clip, tp, state, /*upload_only=*/false);
  });
}

double cuda_read_grad_norm(const std::shared_ptr<DeviceOptimizerState>& state, Device device) {
  if (!state) return 0.0;
  return read_back(state->scalars.data<float>(), compute_stream(device.index));
}

#else

struct DeviceOptimizerState {};

double cuda_global_grad_norm(dist::FlatParams&, const FlatOptimizerState&, const std::vector<FlatRun>&, dist::Comm*) {
  ND_FAIL("this nanodist was built without CUDA");
}

void cuda_upload_step_scalars(dist::FlatParams&, FlatOptimizerState&, const std::vector<FlatRun>&, const AdamWHyper&,
                              dist::Comm*, std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

void cuda_enqueue_clip_and_update(dist::FlatParams&, FlatOptimizerState&, const std::vector<FlatRun>&,
                                  const AdamWHyper&, double, dist::Comm*, std::shared_ptr<DeviceOptimizerState>&) {
  ND_FAIL("this nanodist was built without CUDA");
}

double cuda_read_grad_norm(const std::shared_ptr<DeviceOptimizerState>&, Device) {
  ND_FAIL("this nanodist was built without CUDA");
}

#endif

}  // namespace nd::train
