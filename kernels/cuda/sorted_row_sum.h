// The deterministic scatter-add behind both embedding backwards (token and vocabulary-parallel):
// gradient rows summed over the positions that look them up, in a fixed order (no atomics).
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

#include "tensor/dtype.h"

namespace nd::cuda {

// idx (n) ids; dout (n, C) -> grad (rows, C): grad[r] += the sum, in position order, of dout[i]
// over the positions i with idx[i] - first_id == r. Ids outside [first_id, first_id + rows)
// contribute nothing. Bitwise the same every run.
template <typename T>
void scatter_add_rows_by_id(const int32_t* idx, const T* dout, T* grad, int64_t n, int64_t C, int64_t first_id,
                            int64_t rows, cudaStream_t stream = nullptr);

}  // namespace nd::cuda
