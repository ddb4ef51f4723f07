// One rank's part of a sharded checkpoint: an HDF5 file OUT/ckpt_<step>.parts/rank_<r>.h5 holding
// the slices this rank owns as plain f32 datasets, plus /manifest, a text table saying which
// hyperslab of which full tensor each dataset is and its checksum. HDF5 lays out the metadata;
// the bulk bytes are written with pwrite at the offsets HDF5 allocated, so a full disk or a
// file-size limit is the system's own reason in one error line. Temporary name, fsync, rename.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/ckpt/checkpoint_slices.h"

namespace nd::train {

// A slice to write: the elements `box` of the full tensor `group`/`name` ("params",
// "optimizer/m", "optimizer/v"), `data` holding box.numel() f32 values, row-major.
struct OwnedSlice {
  std::string group;
  std::string name;
  std::vector<int64_t> full_shape;
  Hyperslab box;
  const float* data = nullptr;
};

// Where a slice lives on disk: `part` is the part file's path relative to the index's directory.
struct SliceRecord {
  std::string group;
  std::string name;
  std::string part;
  std::string dataset;
  std::vector<int64_t> full_shape;
  Hyperslab box;
  uint64_t checksum = 0;
  bool chunked_checksum = false;  // kChunkedChecksum (checksum.h); false: checksum64 of the bytes, as older checkpoints have
  int64_t file_offset = 0;  // where the dataset's bytes start in the part file (contiguous layout)
};

// OUT/ckpt_000250.h5 -> OUT/ckpt_000250.parts (the directory of its part files).
std::string parts_directory(const std::string& index_path);
// "ckpt_000250.parts/rank_00003.h5", relative to the index's directory.
std::string part_file_name(const std::string& index_path, int rank);

// Writes rank `rank`'s part durably (creating the parts directory); returns its records.
// nd::Error "cannot write checkpoint part ...: <why>" with no file left behind on failure.
std::vector<SliceRecord> write_checkpoint_part(const std::string& index_path, int rank,
                                               const std::vector<OwnedSlice>& slices);

// Tests only: synchronous writes checksum slices as older checkpoints did (no attribute), to check that
// such checkpoints still verify.
void set_legacy_checksums_for_testing(bool on);

// The records of a written part (its /manifest), for the index.
std::vector<SliceRecord> read_part_manifest(const std::string& index_path, int rank);

// Manifest and index lines: group, name, part, dataset, offset, count, full shape, checksum,
// file offset, tab-separated. parse_record_line: nd::Error (input) on a malformed line, a box
// outside the full shape, sizes past 64 bits, or a part outside the index's directory.
std::string record_line(const SliceRecord& r);
SliceRecord parse_record_line(const std::string& line, const std::string& source);

// Reads slices from the part files of one checkpoint (each opened once).
class PartReader {
 public:
  explicit PartReader(std::string index_dir) : dir_(std::move(index_dir)) {}
  ~PartReader();
  PartReader(const PartReader&) = delete;
  PartReader& operator=(const PartReader&) = delete;
  // record.box.numel() floats into `out`, checksum verified; nd::Error naming the part and the
  // dataset when the file is missing or short or the checksum differs.
  void read(const SliceRecord& record, float* out);
  // nd::Error unless the record's bytes lie inside its part file (before memory is set aside for them).
  void check_extent(const SliceRecord& record);

 private:
  int open_part(const SliceRecord& record);  // its file descriptor, opened once
  std::string dir_;
  std::vector<std::pair<std::string, int>> open_;  // part name, file descriptor
};

}  // namespace nd::train
