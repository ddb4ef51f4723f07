// What the split-linear tests (CPU/MPI and NCCL) share: every tp group with every chunk count of
// the split collectives, a rank-ordered whole built from every rank's rank-dependent block, and
// the scattered linear's summed partial products.
#pragma once
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/parallel/sequence_parallel.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/two_halves_comm.h"
#include "tests/nn/tp_test_util.h"

namespace nd::test {

// Runs check(tp, collectives) for every tp group `world` can form (native, ring and peer, sequence
// parallel), unsplit (0) and in 1, 2, 3 and 5 chunks; and with the reduce-scatter in two halves
// (tests/dist/two_halves_comm.h, what the copy engines' peer comm does) over the native group.
template <typename Check>
void for_each_split(dist::Comm& world, Check check) {
  for_each_tp_comm(world, [&](dist::Comm& group, int) {
    const dist::TensorParallel tp{&group, true};
    for (int chunks : {0, 1, 2, 3, 5}) {
      SCOPED_TRACE(::testing::Message() << chunks << " chunks");
      check(tp, dist::split_collectives(tp, chunks));
    }
    if (dynamic_cast<dist::RingComm*>(&group) || dynamic_cast<dist::PeerComm*>(&group)) return;
    TwoHalvesComm halves(group);
    const dist::TensorParallel split_tp{&halves, true};
    SCOPED_TRACE("reduce-scatter in two halves");
    check(split_tp, dist::split_collectives(split_tp, 1));
  });
}

// Rank r's block of a rank-ordered whole, for every r: (tp * rows, cols), f32 on the CPU.
inline Tensor whole_of(int tp, int64_t rows, int64_t cols, uint64_t seed) {
  Tensor whole = Tensor::empty({tp * rows, cols});
  for (int r = 0; r < tp; ++r)
    whole.narrow(r * rows, rows).copy_from(rank_input(r, rows * cols, DType::F32, seed).view({rows, cols}));
  return whole;
}

// The scattered linear's reference before the reduce-scatter: the sum over every rank q of q's
// partial product x_q · w_qᵀ, x_q = (tp * rows, k) from x_seed and w_q = (n, k) from w_seed (rank
// q's inputs), f32 on the CPU, (tp * rows, n); rank r's output is block r of it.
inline Tensor summed_partial_products(int tp, int64_t rows, int64_t k, int64_t n, uint64_t x_seed, uint64_t w_seed) {
  Tensor sum = Tensor::zeros({tp * rows, n});
  for (int q = 0; q < tp; ++q) {
    NoGradGuard values_only;
    Tensor part = ops::linear(Variable(rank_input(q, tp * rows * k, DType::F32, x_seed).view({tp * rows, k})),
                              Variable(rank_input(q, n * k, DType::F32, w_seed).view({n, k})), Variable())
                      .data();
    for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += part.data<float>()[i];
  }
  return sum;
}

}  // namespace nd::test
