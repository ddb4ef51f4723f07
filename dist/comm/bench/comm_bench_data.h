// Closed-form test data for the comm bench (nccl-tests style): element i on rank r is
// pattern(r, i) = (r + 1) + h(i), h(i) in [0, 8) a hash of i, so the sum over n ranks is
// n(n+1)/2 + n h(i): small integers, exact in f32 and in bf16 for up to 12 ranks.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace nd::dist::bench {

float pattern(int rank, int64_t i);
float pattern_sum(int nranks, int64_t i);

// Element i (global index first + i) of a host buffer of `count` elements.
enum class Expect {
  OwnPattern,     // pattern(rank, first + i)
  RankSum,        // pattern_sum(nranks, first + i)
  BlockOwner,     // pattern(i / block, i): what an all-gather of blocks leaves
  Transposed,     // pattern(i / block, rank * block + i % block): what an all-to-all leaves
};

// Fills `buffer` (any device, f32 or bf16) with pattern(rank, first + i).
void fill_pattern(Tensor& buffer, int rank, int64_t first);
// Elements of `buffer` (any device) differing from the expectation; `rank` is used by
// OwnPattern and Transposed, `nranks` by RankSum, `block` by BlockOwner and Transposed.
int64_t count_wrong(const Tensor& buffer, Expect expect, int rank, int nranks, int64_t first, int64_t block);

}  // namespace nd::dist::bench
