// Reading .safetensors files (the format of Hugging Face model weights): 8 bytes of little-endian
// header length N, N bytes of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}},
// plus an optional "__metadata__"), then the raw little-endian tensor bytes, offsets relative to
// their start. Read by hand: the format is that simple, no library needed.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace nd::train {

// Every tensor of `path` as a CPU f32 tensor (F32 as stored; F16 and BF16 widened exactly), in
// the header's name order. nd::Error (input) naming the file on a short or malformed file, a
// tensor outside the data, a size that does not match its shape, or another dtype.
std::vector<std::pair<std::string, Tensor>> read_safetensors(const std::string& path);

}  // namespace nd::train
