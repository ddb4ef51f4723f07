// FP8 delayed-scaling state in checkpoints: for every quantised tensor NAME of nn/fp8_scaling.h
// (e.g. transformer.h.0.attn.c_attn.x), two f32 slices under /state/fp8 in the rank's part, so
// they go the tensors' way (temporary name, fsync, rename, checksums, the index's virtual datasets):
//   /state/fp8/amax_history/NAME  (L): the ring's amaxes oldest to newest, then zeros (L its length)
//   /state/fp8/scaling/NAME       (3): the scale the next step quantises with, the amaxes the ring
//                                      holds (<= L), the ring's next slot
// One rank of those holding a tensor writes it (the histories are agreed over tp and dp; stages
// write the names they hold); at resume each rank reads the names it holds.
#pragma once
#include <string>
#include <vector>

#include "nn/fp8_scaling.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/checkpoint_part.h"

namespace nd::train {

extern const char* const kFp8HistoryGroup;  // "state/fp8/amax_history"
extern const char* const kFp8ScalingGroup;  // "state/fp8/scaling"

// A host copy of a DelayedScaling's state as slices to write; taken when the save starts, so
// training may go on changing the scaling while a background thread writes them.
class Fp8StateSnapshot {
 public:
  void take(const nn::DelayedScaling& scaling);
  void clear();
  const std::vector<OwnedSlice>& slices() const { return slices_; }

 private:
  std::vector<std::vector<float>> values_;  // what slices_ point into
  std::vector<OwnedSlice> slices_;
};

// Sets `scaling` (null: the run has no FP8) from the checkpoint `reader` reads, for the tensors it
// holds; returns the lines to tell the user: a checkpoint without FP8 state leaves the scaling
// fresh, one with FP8 state is ignored without `scaling`, a ring of another length keeps its
// newest amaxes that fit, tensors the checkpoint lacks start fresh. nd::Error (input) when a
// record is malformed or a slice corrupt.
std::vector<std::string> load_fp8_state(CheckpointReader& reader, nn::DelayedScaling* scaling);

}  // namespace nd::train
