// Each tensor-parallel layer under mpirun, for every tp that divides the world: built from the
// same seed as the unsplit layer, its parameters are exactly the slices of the unsplit ones, and
// its output and gradients (input and every parameter) equal the unsplit layer's or their slices
// (f32, 1e-5). Attention and MLP run in training mode with dropout, so the masks must match too.
#include <gtest/gtest.h>

#include "autograd/parallel_ops.h"
#include "dist/comm/world.h"
#include "dist/parallel/parallel_linear.h"
#include "dist/parallel/tensor_parallel_layers.h"
#include "nn/layers.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

using dist::ColumnParallelLinear;
using dist::RowParallelLinear;
using dist::TensorParallel;

constexpr double kAtol = 2e-6, kRtol = 2e-5;

Tensor random(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, 0.0, 1.0);
}

// Parameters of `split` (this rank's shards) against those of `full`: same names, values exactly
// the slices, gradients the slices within tolerance.
void expect_parameters_are_slices(const Module& full, const Module& split, const TensorParallel& tp) {
  const NamedParameters fp = full.named_parameters(), sp = split.named_parameters();
  const NamedParamInfos infos = split.named_param_infos();
  ASSERT_EQ(fp.size(), sp.size());
  for (size_t i = 0; i < fp.size(); ++i) {
    const std::string& name = fp[i].first;
    ASSERT_EQ(sp[i].first, name);
    const ShardSpec& spec = infos[i].second.split;
    EXPECT_EQ(test::count_far_from_shard(sp[i].second.data(), fp[i].second.data(), spec, tp.rank(), tp.size(), 0, 0,
                                         name + " value"),
              0);
    EXPECT_EQ(test::count_far_from_shard(sp[i].second.grad(), fp[i].second.grad(), spec, tp.rank(), tp.size(), kAtol,
                                         kRtol, name + " grad"),
              0);
  }
}

// Runs `check(tp)` for every tensor-parallel group the world can form.
TEST(TensorParallelLayers, ColumnParallelLinearKeepsItsOutputColumns) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    for (int parts : {1, 3}) {
      Generator g1(5), g2(5);
      const LinearSpec spec{8, 36, true, 0.5, LinearRole::Expand, parts};
      Linear full(spec, g1, Placement{});
      ColumnParallelLinear split(spec, g2, Placement{}, tp);
      const ShardSpec out_columns{2, parts};
      Variable x_full(random({2, 3, 8}, 6), true), x_split(random({2, 3, 8}, 6), true);
      Variable y_full = full.forward(x_full), y_split = split.forward(x_split);
      EXPECT_EQ(test::count_far_from_shard(y_split.data(), y_full.data(), out_columns, tp.rank(), tp.size(), kAtol,
                                           kRtol, "y"),
                0);
      Tensor r = random({2, 3, 36}, 7);
      y_full.backward(r);
      y_split.backward(nn::shard_of(r, out_columns, tp.rank(), tp.size()));
      EXPECT_EQ(test::count_far(x_split.grad(), x_full.grad(), kAtol, kRtol, "dx"), 0);
      expect_parameters_are_slices(full, split, tp);
    }
  });
}

TEST(TensorParallelLayers, RowParallelLinearSumsItsInputRows) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    Generator g1(8), g2(8);
    const LinearSpec spec{36, 8, true, 0.5, LinearRole::Project};
    Linear full(spec, g1, Placement{});
    RowParallelLinear split(spec, g2, Placement{}, tp);
    const ShardSpec in_columns{2, 1};
    Tensor x = random({2, 3, 36}, 9);
    Variable x_full(x, true), x_split(nn::shard_of(x, in_columns, tp.rank(), tp.size()), true);
    // The bias must be added once, not once per rank: give it a value first.
    full.bias.data().copy_from(random({8}, 10));
    split.bias.data().copy_from(random({8}, 10));
    Variable y_full = full.forward(x_full), y_split = split.forward(x_split);
    EXPECT_EQ(test::count_far(y_split.data(), y_full.data(), kAtol, kRtol, "y"), 0);
    Tensor r = random({2, 3, 8}, 11);
    y_full.backward(r);
    y_split.backward(r);
    EXPECT_EQ(test::count_far_from_shard(x_split.grad(), x_full.grad(), in_columns, tp.rank(), tp.size(), kAtol,
                                         kRtol, "dx"),
              0);
    expect_parameters_are_slices(full, split, tp);
  });
}

// A block's attention or MLP: full input, full output on every rank.
template <typename Layer>
void check_replicated_io_layer(const TensorParallel& tp) {
  const BlockShape shape{24, 12, 2, true, 0.2f};
  Generator g1(12), g2(12);
  Layer full(shape, g1, Placement{});
  Layer split(shape, g2, Placement{}, dist::TensorParallelLayers(tp));
  Variable x_full(random({2, 5, 24}, 13), true), x_split(random({2, 5, 24}, 13), true);
  Generator d1(14), d2(14);
  Variable y_full = full.forward(x_full, d1), y_split = split.forward(x_split, d2);
  EXPECT_EQ(d1.offset(), d2.offset()) << "the dropout generator advanced differently";
  EXPECT_EQ(test::count_far(y_split.data(), y_full.data(), kAtol, kRtol, "y"), 0);
  Tensor r = random({2, 5, 24}, 15);
  y_full.backward(r);
  y_split.backward(r);
  EXPECT_EQ(test::count_far(x_split.grad(), x_full.grad(), kAtol, kRtol, "dx"), 0);
  expect_parameters_are_slices(full, split, tp);
}

TEST(TensorParallelLayers, AttentionSplitByHeadsWithDropout) {
  test::for_each_tp_group(test::mpi_world(),
                          [](const TensorParallel& tp) { check_replicated_io_layer<CausalSelfAttention>(tp); });
}

TEST(TensorParallelLayers, MLPColumnThenRowWithDropout) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) { check_replicated_io_layer<MLP>(tp); });
}

TEST(TensorParallelLayers, VocabParallelEmbeddingThenPositions) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    const int64_t Vp = 6 * tp.size(), C = 4;
    Tensor wte = random({Vp, C}, 16), wpe = random({7, C}, 17);
    Tensor idx = test::random_ids({3, 5}, static_cast<int>(Vp), 18);
    Variable wte_full(wte, true), wpe_full(wpe.clone(), true);
    const ShardSpec rows{0, 1};
    Variable wte_split(nn::shard_of(wte, rows, tp.rank(), tp.size()), true), wpe_split(wpe.clone(), true);
    Variable y_full = ops::embedding(idx, wte_full, wpe_full);
    const int64_t start = tp.rank() * wte_split.shape()[0];
    Variable own_rows = ops::vocab_parallel_embedding(idx, wte_split, start, Vp);
    Variable y_split = ops::add_positions(dist::reduce_from_tp(own_rows, tp), wpe_split);
    EXPECT_EQ(test::count_far(y_split.data(), y_full.data(), 0, 0, "y"), 0);
    Tensor r = random({3, 5, C}, 19);
    y_full.backward(r);
    y_split.backward(r);
    EXPECT_EQ(test::count_far_from_shard(wte_split.grad(), wte_full.grad(), rows, tp.rank(), tp.size(), 0, 0, "dwte"),
              0);
    EXPECT_EQ(test::count_far(wpe_split.grad(), wpe_full.grad(), kAtol, kRtol, "dwpe"), 0);
  });
}

TEST(TensorParallelLayers, ATpThatDoesNotDivideTheHeadsIsAnError) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    Generator gen(1);
    const BlockShape shape{10 * tp.size() + 5, 5, 1, true, 0.0f};
    try {
      CausalSelfAttention attention(shape, gen, Placement{}, dist::TensorParallelLayers(tp));
      ADD_FAILURE() << "expected nd::Error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not divide n_head 5"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace nd::nn
