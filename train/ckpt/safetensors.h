// Reading .safetensors files (the format of Hugging Face model weights): 8 bytes of little-endian
// header length N, N bytes of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}},
// plus an optional "__metadata__"), then the raw little-endian tensor bytes, offsets relative to
// their start. Read by hand: the format is that simple, no library needed.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace nd::train {

// One tensor of the header, checked against the file: its bytes [begin, end) of the data lie
// inside the file and are exactly its shape's elements of its dtype.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // F32, F16 or BF16
  Shape shape;
  int64_t begin = 0;
  int64_t end = 0;
};

// The header of `path` in the order of the tensors' data. nd::Error (input) naming the file on a
// short or malformed file, a tensor outside the data, a size that does not match its shape (sizes
// computed without overflow), or another dtype.
std::vector<SafetensorsEntry> read_safetensors_header(const std::string& path);

// Every tensor of `path` as a CPU f32 tensor (F32 as stored; F16 and BF16 widened exactly), in
// the order of their data; the same checks.
std::vector<std::pair<std::string, Tensor>> read_safetensors(const std::string& path);

}  // namespace nd::train
