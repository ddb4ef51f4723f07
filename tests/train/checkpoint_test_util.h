// Shared pieces of the checkpoint tests: random data for snapshot regions, the bytes of a
// checkpoint's rank-0 part (async and sync saves must write the same), and a flipped byte in a
// part (what the checksums must catch).
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/ckpt/hdf5_file.h"
#include "process_helpers.h"

namespace nd::train::testing {

// n normal draws from `seed`, times `scale`.
inline std::vector<float> random_floats(int64_t n, uint64_t seed, float scale = 1.0f) {
  Generator gen(seed);
  std::vector<float> x = Tensor::randn({n}, gen).to_float_vector();
  if (scale != 1.0f)
    for (float& f : x) f *= scale;
  return x;
}

// The bytes of rank 0's part of the checkpoint whose index is `index`.
inline std::string rank0_part_bytes(const std::string& index) {
  return slurp_file(parts_directory(index) + "/rank_00000.h5");
}

// Flips one byte in the middle of the first slice of `index`'s part 0.
inline void flip_a_checkpoint_byte(const std::string& index) {
  Hdf5File file = Hdf5File::open_read(index);
  std::istringstream lines(file.read_string("/slices"));
  std::string line;
  std::getline(lines, line);
  SliceRecord r = parse_record_line(line, index);
  std::fstream f(std::filesystem::path(index).parent_path().string() + "/" + r.part,
                 std::ios::in | std::ios::out | std::ios::binary);
  const int64_t at = r.file_offset + r.box.numel() * 2;
  char byte = 0;
  f.seekg(at);
  f.read(&byte, 1);
  byte ^= 0x10;
  f.seekp(at);
  f.write(&byte, 1);
}

}  // namespace nd::train::testing
