// The reduction step of a reduce-scatter whose blocks were moved by the copy engines
// (dist/comm/peer_copy.h): each rank's block of the result is the sum, in rank order, of the blocks the
// ranks sent it, one of which is its own input's.
#pragma once
#include "kernels/cuda/stream_type.h"

#include <cstdint>

namespace nd::cuda {

constexpr int kSumBlocksMax = 8;

// out (n) = scale * (blocks[0] + ... + blocks[count - 1]) (n each, count <= kSumBlocksMax; the
// pointers are read on the host), summed in f32 in that order and rounded once. TIn -> TOut: float
// -> float, bf16 -> bf16, or bf16 -> float (each bf16 widened exactly first: the bits of the f32 sum
// of the widened blocks, from half the bytes read).
// `accumulate` (f32 out only): out = out + scale * (the same sum), in this order: the blocks summed
// in rank order, the sum scaled, then added to out, each step rounded to nearest on its own (never
// contracted into an FMA). Those are the bits of a reduce-scatter into a temporary followed by
// out += temporary, which is what the host reference and ZeRO's landing path compute.
template <typename TIn, typename TOut>
void sum_blocks(const TIn* const* blocks, int count, TOut* out, int64_t n, float scale, bool accumulate,
                cudaStream_t stream);

}  // namespace nd::cuda
