// The position embedding of one rank's share of the tokens (sequence parallelism,
// dist/parallel/sequence_parallel.h): the share holds a contiguous range of the whole (B, T, C) flattened
// over (B, T), which may start inside a sequence and run on into the next ones.
#pragma once
#include <cstdint>

#include "autograd/variable.h"

namespace nd::ops {

// x (..., C) holding S tokens, flattened token first_token + j at position (first_token + j) % T;
// wpe (Tmax, C) with T <= Tmax -> x + wpe[that position] for every token: ops::add_positions of the
// whole restricted to the share. Backward passes the gradient to x and sums it into those rows of
// wpe's gradient.
Variable add_positions_share(const Variable& x, const Variable& wpe, int64_t first_token, int64_t T);

}  // namespace nd::ops
