// Which elements of a checkpoint's full, by-name tensors a rank holds, writes and reads, as
// hyperslabs (an offset and a count per dimension) of the full shape. A tensor-parallel shard is
// `parts` blocks of the full tensor; the ranks holding the same block (the data-parallel replicas
// of a shard, or every rank for a replicated tensor) split it along dimension 0 and each writes
// its own rows, so a save is spread evenly over all ranks with no gather. A later ZeRO shard (a
// flat range: at most three hyperslabs) or a pipeline stage (whole tensors) is just another set
// of owned slices.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nn/shard_spec.h"

namespace nd::train {

struct Hyperslab {
  std::vector<int64_t> offset;
  std::vector<int64_t> count;

  int64_t numel() const;
  bool empty() const { return numel() == 0; }
  bool operator==(const Hyperslab& o) const { return offset == o.offset && count == o.count; }
};

// The whole of a tensor of shape `shape`.
Hyperslab whole(const std::vector<int64_t>& shape);
// The common part of a and b (empty counts when they do not meet).
Hyperslab intersect(const Hyperslab& a, const Hyperslab& b);

// One block a rank's local tensor holds: where it sits in the full tensor and in the local one
// (same counts).
struct BlockMap {
  Hyperslab full;
  Hyperslab local;
};

// How one tensor is laid out: its checkpointed (logical) shape and this rank's tensor.
struct TensorPlacement {
  std::vector<int64_t> full_shape;   // the token embedding: vocab_size rows, without padding
  std::vector<int64_t> local_shape;  // this rank's tensor (a tp shard, perhaps with padding rows)
  nn::ShardSpec spec;                // the tensor-parallel split; replicated when !spec.sharded()
  int tp_rank = 0;
  int tp_size = 1;
};

// The blocks of the full tensor that this rank's tensor holds, clipped to full_shape (padding
// rows of the token embedding belong to no block).
std::vector<BlockMap> held_blocks(const TensorPlacement& placement);

// The blocks this rank writes: its held blocks, each cut along dimension 0 into `holders` row
// ranges of which it takes number `holder`. Blocks under a page are not worth cutting: one holder
// (picked from the tensor's name, so small tensors spread over the ranks) writes each whole.
constexpr int64_t kSplitBytes = 4096;
std::vector<BlockMap> owned_blocks(const TensorPlacement& placement, const std::string& name, int holder, int holders);

// Copies the box `count` starting at `src_start` of the row-major array `src` (shape src_shape)
// to `dst_start` of the row-major array `dst` (shape dst_shape); elements of `elem` bytes.
void copy_box(const char* src, const std::vector<int64_t>& src_shape, const std::vector<int64_t>& src_start,
              char* dst, const std::vector<int64_t>& dst_shape, const std::vector<int64_t>& dst_start,
              const std::vector<int64_t>& count, size_t elem);

// "3,4" <-> {3, 4} (the text form in manifests and indexes); nd::Error on a malformed list.
std::string dims_str(const std::vector<int64_t>& dims);
std::vector<int64_t> parse_dims(const std::string& text);

}  // namespace nd::train
