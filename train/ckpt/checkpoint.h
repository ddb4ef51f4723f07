// Checkpoints: OUT/ckpt_<step>.h5 is the index (checkpoint_index.h), readable with h5py as one
// logical model:
//   /config                attributes: every model and train field
//   /params/<name>         f32, full shapes (HDF5 virtual datasets over the part files)
//   /optimizer/m/<name>    f32 AdamW first moments;  /optimizer/v/<name> second moments
//   /state                 attributes: step, optimizer_step, dropout RNG, data loader step, ...;
//                          /state/fp8/...: the FP8 amax histories and scales (fp8_checkpoint.h)
//   /tokenizer             the tokenizer file's text, so `sample` needs only the checkpoint
//   /slices                which hyperslab of which tensor is in which part file, with checksums
// and OUT/ckpt_<step>.parts/rank_<r>.h5 hold the slices each rank owns (checkpoint_part.h). Every
// file is written under a temporary name (a leading dot, matching no listing or `ckpt_*.h5`
// glob), fsynced and renamed; the index comes last, so a checkpoint whose index exists is
// complete, and a crash (kill -9 included) never leaves one that looks complete.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "train/ckpt/hdf5_file.h"

namespace nd::train {

struct CheckpointState {
  int64_t step = 0;            // optimizer steps completed; training resumes at this step
  int64_t optimizer_step = 0;  // AdamW's bias-correction counter
  uint64_t dropout_seed = 0;   // dropout Generator (seed, stream, offset)
  uint64_t dropout_stream = 0;
  uint64_t dropout_offset = 0;
  uint64_t data_step = 0;      // BatchLoader::step() of the training loader
  int64_t world_size = 1;
  double best_val_loss = std::numeric_limits<double>::infinity();
  int64_t tokens = 0;          // training tokens consumed over all ranks
  double loss_scale = 1.0;     // the loss scaler (train/loss_scaler.h): its scale, finite steps in a
  int64_t loss_scale_finite_steps = 0;  // row and skipped steps; 1, 0, 0 without loss scaling
  int64_t overflow_skips = 0;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct CheckpointData {
  std::vector<std::pair<std::string, AttrValue>> config;
  NamedTensors params;
  NamedTensors m;  // same names as params
  NamedTensors v;
  CheckpointState state;
  std::string tokenizer_text;
};

// Writes `data` (whole tensors, one owner) as a checkpoint of one part, replacing one at `path`;
// nd::Error "cannot write checkpoint <path>: <why>" (and no file under `path`, no temporary
// left) on failure, e.g. a full disk.
void write_checkpoint(const std::string& path, const CheckpointData& data);
// Reads a whole checkpoint (checksums verified; older single-file checkpoints too); nd::Error
// naming the file when it is missing, malformed, incomplete or corrupt.
CheckpointData read_checkpoint(const std::string& path);

// OUT/ckpt_000250.h5
std::string checkpoint_path(const std::string& out_dir, int64_t step);
// Complete checkpoints in `out_dir` (names ckpt_<digits>.h5 only: temporaries are ignored),
// ordered by step. Empty when the directory does not exist.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir);
// The newest complete checkpoint, or "" when there is none.
std::string newest_checkpoint(const std::string& out_dir);
// Removes the temporaries a killed writer left in `out_dir`, and the parts of checkpoints that
// never got their index; returns how many.
int remove_checkpoint_temporaries(const std::string& out_dir);
// Removes all but the newest `keep` checkpoints (keep 0 = keep all).
void prune_checkpoints(const std::string& out_dir, int keep);
// A checkpoint file, or the newest checkpoint of a directory; nd::Error when there is none.
std::string resolve_checkpoint(const std::string& file_or_dir);

// read_checkpoint of a file, or of the newest checkpoint of a directory that reads whole: a newer
// one that does not (a missing part, a checksum mismatch, a damaged index) is skipped with one
// line in `skipped`. `path` gets the checkpoint read. nd::Error when none reads.
CheckpointData read_newest_checkpoint(const std::string& file_or_dir, std::string& path,
                                      std::vector<std::string>& skipped);

// Lookup in a config attribute list; nd::Error naming `source` when missing or mistyped.
const AttrValue& find_attr(const std::vector<std::pair<std::string, AttrValue>>& attrs, const std::string& name,
                           const std::string& source);
int64_t attr_as_int(const AttrValue& value, const std::string& what);
double attr_as_double(const AttrValue& value, const std::string& what);
std::string attr_as_string(const AttrValue& value, const std::string& what);

}  // namespace nd::train
