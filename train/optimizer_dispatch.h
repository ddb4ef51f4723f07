// The one place where the optimizer picks kernels by device. Both calls take the whole parameter
// list, so a device backend can sweep every tensor in one launch (kernels/cuda's multi-tensor
// AdamW and global norm); the CPU backend loops over the tensors.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/adamw_hyper.h"
#include "train/optimizer.h"

namespace nd::train {

// True when `tp` has more than one rank and some state is sharded over it.
bool splits_norm(const std::vector<ParamState>& states, dist::Comm* tp);

// sqrt of the sum of squares of every gradient (states without a gradient count as zero). With a
// tensor-parallel group `tp` of more than one rank (collective over it), the squares of the
// sharded states are summed over the group and the replicated ones counted once: the norm of the
// unsplit model, the same on every rank of the group. nullptr: no tensor parallelism.
double global_grad_norm(const std::vector<ParamState>& states, dist::Comm* tp = nullptr);

// The global gradient norm, then one AdamW update of every state that has a gradient with the
// gradients scaled by clip_scale(norm, grad_clip); returns the norm before clipping. A non-finite
// norm updates nothing (on the GPU the clip factor becomes NaN and AdamW skips). On the GPU
// the norm, the clip factor and the update stay on the device (two launches for the norm, one
// for AdamW); `device_state` caches their launch data between steps.
double clip_and_update(std::vector<ParamState>& states, const AdamWHyper& hyper, double grad_clip, dist::Comm* tp,
                       std::shared_ptr<DeviceOptimizerState>& device_state);

// The GPU half (train/optimizer_cuda.cpp); nd::Error in a build without CUDA.
double cuda_global_grad_norm(const std::vector<ParamState>& states, dist::Comm* tp);
double cuda_clip_and_update(std::vector<ParamState>& states, const AdamWHyper& hyper, double grad_clip, dist::Comm* tp,
                            std::shared_ptr<DeviceOptimizerState>& device_state);

// cuda_clip_and_update in three parts, for CUDA graph capture: the upload of this step's lr and
// bias corrections (a host-to-device copy, outside the graph), the kernels (norm, clip factor,
// AdamW; capturable once `device_state` matches the current addresses), and the norm read back.
// Under tensor parallelism (tp of more than one rank holding sharded states) the norm is the
// unsplit model's, as on the CPU: the sharded states' sum of squares is all-reduced over `tp` on
// the device, inside the enqueued work (capturable; collective over tp).
void cuda_upload_step_scalars(const std::vector<ParamState>& states, const AdamWHyper& hyper, dist::Comm* tp,
                              std::shared_ptr<DeviceOptimizerState>& device_state);
void cuda_enqueue_clip_and_update(std::vector<ParamState>& states, const AdamWHyper& hyper, double grad_clip,
                                  dist::Comm* tp, std::shared_ptr<DeviceOptimizerState>& device_state);
double cuda_read_grad_norm(const std::vector<ParamState>& states,
                           const std::shared_ptr<DeviceOptimizerState>& device_state);

}  // namespace nd::train
