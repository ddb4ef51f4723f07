// The index of a sharded checkpoint, OUT/ckpt_<step>.h5, written by rank 0 once every rank's part
// (checkpoint_part.h) is durable; its rename is the moment the checkpoint exists. It holds
// /config, /state and /tokenizer as an unsharded checkpoint does, /slices (every part's manifest:
// which hyperslab of which tensor lives where, with its checksum), and for every tensor a
// full-shape HDF5 virtual dataset (/params/<name>, /optimizer/m/<name>, /optimizer/v/<name>)
// mapping the parts' slices, so h5py reads the checkpoint as one logical model.
// CheckpointReader reads both this and the older single-file checkpoints.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_part.h"

namespace nd::train {

// The tensor groups of a checkpoint, as slice records name them.
extern const char* const kCheckpointGroups[3];  // "params", "optimizer/m", "optimizer/v"

// Writes the index of checkpoint `index_path` from the manifests of parts 0 .. parts - 1 and the
// config, state and tokenizer of `meta` (its tensors are not looked at). Temporary name, fsync,
// rename, directory fsync. Returns the bytes of tensor data in all parts. nd::Error when a part
// is missing or unreadable.
int64_t write_checkpoint_index(const std::string& index_path, int parts, const CheckpointData& meta);

// Removes a checkpoint: its index first (so it stops being complete), then its parts.
void remove_checkpoint(const std::string& index_path);

class CheckpointReader {
 public:
  // Opens the index (or an unsharded checkpoint); nd::Error naming the file when it is missing,
  // malformed or not a nanodist checkpoint.
  explicit CheckpointReader(const std::string& path);
  ~CheckpointReader();

  const std::string& path() const { return path_; }
  // /config, /state and /tokenizer (no tensors).
  const CheckpointData& meta() const { return meta_; }
  std::vector<std::string> names(const std::string& group) const;  // sorted
  bool has(const std::string& group, const std::string& name) const;
  std::vector<int64_t> full_shape(const std::string& group, const std::string& name) const;

  // The elements `box` of the full tensor group/name into `out` (box.numel() f32, row-major):
  // reads each slice that meets the box (and only those), verifies its checksum, and checks that
  // the slices cover the box. nd::Error naming the tensor and the file otherwise.
  void read_box(const std::string& group, const std::string& name, const Hyperslab& box, float* out);
  Tensor read_full(const std::string& group, const std::string& name);

 private:
  struct Slices {
    std::vector<int64_t> full_shape;
    std::vector<SliceRecord> records;  // empty for an unsharded checkpoint
  };
  std::string path_;
  CheckpointData meta_;
  std::map<std::string, Slices> tensors_;  // "params/<name>", ...
  std::unique_ptr<Hdf5File> unsharded_;    // an older single-file checkpoint
  std::unique_ptr<PartReader> parts_;
  std::string cached_;                     // the last slice read (a slice may meet several boxes)
  std::vector<float> cached_data_;
};

}  // namespace nd::train
