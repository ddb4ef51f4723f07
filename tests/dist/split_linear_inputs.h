// What the split-linear tests (CPU/MPI and NCCL) share: every tp group with every chunk count of
// the split collectives, and a rank-ordered whole built from every rank's rank-dependent block.
#pragma once
#include <gtest/gtest.h>

#include "dist/sequence_parallel.h"
#include "tests/dist/collective_inputs.h"
#include "tests/nn/tp_test_util.h"

namespace nd::test {

// Runs check(tp, collectives) for every tp group `world` can form (native and ring, sequence
// parallel), unsplit (0) and in 1, 2, 3 and 5 chunks.
template <typename Check>
void for_each_split(dist::Comm& world, Check check) {
  for_each_tp_comm(world, [&](dist::Comm& group, int) {
    const dist::TensorParallel tp{&group, true};
    for (int chunks : {0, 1, 2, 3, 5}) {
      SCOPED_TRACE(::testing::Message() << chunks << " chunks");
      check(tp, dist::split_collectives(tp, chunks));
    }
  });
}

// Rank r's block of a rank-ordered whole, for every r: (tp * rows, cols), f32 on the CPU.
inline Tensor whole_of(int tp, int64_t rows, int64_t cols, uint64_t seed) {
  Tensor whole = Tensor::empty({tp * rows, cols});
  for (int r = 0; r < tp; ++r)
    whole.narrow(r * rows, rows).copy_from(rank_input(r, rows * cols, DType::F32, seed).view({rows, cols}));
  return whole;
}

}  // namespace nd::test
