// The one place where the optimizer picks kernels by device. Every call takes the step's flat runs
// (train/optimizer.h), so a device backend sweeps them all in one launch (kernels/cuda's
// multi-tensor AdamW and global norm); the CPU backend loops over them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/adamw_hyper.h"
#include "train/optimizer.h"

namespace nd::train {

// True when `tp` has more than one rank and some run is sharded over it.
bool splits_norm(const std::vector<FlatRun>& runs, dist::Comm* tp);

// sqrt of the sum of squares of the gradients in `runs` (state.grads at each run's `local`). With a
// tensor-parallel group `tp` of more than one rank (collective over it), the squares of the sharded
// runs are summed over the group and the replicated ones counted once: the norm of the unsplit
// model, the same on every rank of the group. nullptr: no tensor parallelism. Under ZeRO
// (state.shard_group) both sums are first summed over the data-parallel shards.
double global_grad_norm(dist::FlatParams& flat, const FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                        dist::Comm* tp = nullptr);

// The CPU step: the global norm, then one AdamW update of every run with the gradients scaled by
// clip_scale(norm, grad_clip); returns the norm before clipping. A non-finite norm updates nothing.
double clip_and_update(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                       const AdamWHyper& hyper, double grad_clip, dist::Comm* tp);

// The GPU half (train/optimizer_cuda.cpp); nd::Error in a build without CUDA. The step in three
// parts, for CUDA graph capture: the upload of this step's lr and bias corrections (a host-to-device
// copy, outside the graph), the kernels (norm, clip factor, AdamW; capturable once `device_state`
// matches the runs and addresses), and the norm read back. Under tensor parallelism the sharded
// runs' sum of squares is all-reduced over `tp` on the device, inside the enqueued work.
double cuda_global_grad_norm(dist::FlatParams& flat, const FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                             dist::Comm* tp);
void cuda_upload_step_scalars(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                              const AdamWHyper& hyper, dist::Comm* tp,
                              std::shared_ptr<DeviceOptimizerState>& device_state);
void cuda_enqueue_clip_and_update(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                                  const AdamWHyper& hyper, double grad_clip, dist::Comm* tp,
                                  std::shared_ptr<DeviceOptimizerState>& device_state);
double cuda_read_grad_norm(const std::shared_ptr<DeviceOptimizerState>& device_state, Device device);

}  // namespace nd::train
