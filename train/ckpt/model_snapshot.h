// Between a live model (and its AdamW state) and the slices of a sharded checkpoint. A snapshot
// holds the slices this rank writes (checkpoint_slices.h decides which): copied into host buffers
// (pinned on a GPU) so a background thread can write them while training goes on, or pointing
// into the model's own CPU memory for a synchronous save. load_model_slices fills each rank's
// tensors from any checkpoint layout, reading only the slices that meet what the rank holds.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "dist/parallel/tp_mappings.h"
#include "nn/gpt.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/host_arena.h"
#include "train/optimizer.h"

namespace nd::train {

// How a snapshot holds the slices. kCopy: copied into its own host buffers (pinned on a GPU), the
// model may change right after (an asynchronous save). kBorrow: f32 CPU tensors' slices point into
// the tensors (a synchronous save, written before the model changes).
enum class SnapshotMode { kCopy, kBorrow };

class ModelSnapshot {
 public:
  ModelSnapshot() = default;
  ModelSnapshot(const ModelSnapshot&) = delete;
  ModelSnapshot& operator=(const ModelSnapshot&) = delete;

  // Takes this rank's owned slices of the parameters (the f32 masters where there are), the
  // AdamW moments (when `optimizer` is not null) out of the model; `tp` is the model's
  // tensor-parallel group, `dp_rank` of `dp_size` this rank's place among the data-parallel
  // replicas. Returns when the copies are complete. Buffers (page-aligned, touched once) are kept
  // for the next snapshot of the same layout.
  void take(const nn::GPT& model, const dist::TensorParallel& tp, const AdamW* optimizer, int dp_rank, int dp_size,
            SnapshotMode mode = SnapshotMode::kCopy);
  const std::vector<OwnedSlice>& slices() const { return slices_; }
  int64_t bytes() const;

 private:
  struct Buffer {
    float* data = nullptr;
    size_t count = 0;
    bool pinned = false;
  };
  // Buffer `index` of `count` floats, the one of the snapshot before when it has that size (the
  // same layout); else a new one from the arena (pinned or not), the old one left idle there.
  float* buffer(size_t index, size_t count, bool pinned);
  // ZeRO: the pieces of the parameters (masters), m and v this rank's shard holds.
  void take_sharded(const nn::GPT& model, const dist::TensorParallel& tp, const AdamW& optimizer, SnapshotMode mode);
  std::vector<Buffer> buffers_;
  std::unique_ptr<HostArena> arenas_[2];  // [pinned]: made at the first buffer of each kind
  std::vector<OwnedSlice> slices_;
  std::vector<Tensor> held_;  // tensors that slices point into (copy false), or f32 conversions
};

// Loads parameters (and masters and moments when `optimizer` is not null) from `reader` into
// this rank's tensors (its pieces in the model's tensor-parallel group `tp`), on their device; the
// token embedding's padding rows become zeros. Under ZeRO the masters and moments are read one
// tensor at a time and each rank keeps its pieces. nd::Error when a tensor is missing or has
// another shape, or a slice is corrupt.
void load_model_slices(CheckpointReader& reader, nn::GPT& model, const dist::TensorParallel& tp, AdamW* optimizer);

}  // namespace nd::train
