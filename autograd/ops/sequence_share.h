// Ops on one rank's share of the sequence (Megatron sequence parallelism, dist/sequence_parallel.h):
// x (B, T / n, C) holds positions [first, first + T / n) of every sequence of a (B, T, C) tensor.
// Each does to the share exactly what the op on the whole tensor does to those positions.
#pragma once
#include <cstdint>

#include "autograd/variable.h"

namespace nd {
class Generator;
}

namespace nd::ops {

// ops::dropout of the whole (B, T, C) tensor restricted to the share x (B, T_share, C) at
// positions [first_position, first_position + T_share): the same masks (element (b, t, c) draws
// counter b*T*C + t*C + c), and the generator advances by the whole tensor's B*T*C counters.
Variable dropout_sequence_share(const Variable& x, float p, Generator& gen, bool training, int64_t whole_T,
                                int64_t first_position);

// x (B, T_share, C) + wpe[first_position + t] for t < T_share, wpe (Tmax, C): the position embedding
// of a share; backward sums the gradient over B into those rows of wpe's gradient.
Variable add_positions_from(const Variable& x, const Variable& wpe, int64_t first_position);

}  // namespace nd::ops
