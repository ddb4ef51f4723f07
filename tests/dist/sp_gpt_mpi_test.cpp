// The sequence-parallel GPT under mpirun, for every tp that divides the world (with np 4 also tp 2
// in two groups), at micro-batches of 1 and 3 sequences, with the split (overlapping) collectives
// and unsplit: with dropout, its loss, its gradients (gathered over the group, the replicated ones
// summed by dist::sum_sequence_parallel_gradients) and its parameters after AdamW steps with clipping
// active equal the tp = 1 model's (f32, as tests/dist/tp_gpt_mpi_test.cpp); it keeps fewer
// activation bytes for backward than plain tensor parallelism; a sequence length the group does
// not divide is an nd::Error.
#include <gtest/gtest.h>

#include "dist/comm/world.h"
#include "dist/parallel/parallelize.h"
#include "dist/parallel/sequence_parallel.h"
#include "nn/gpt.h"
#include "tensor/memory_stats.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/nn/tp_test_util.h"
#include "train/optimizer.h"

namespace nd::nn {
namespace {

using dist::TensorParallel;

constexpr double kAtol = 2e-6, kRtol = 2e-5;
constexpr int kSteps = 3;
constexpr double kLr = 1e-2, kClip = 0.05;

// Sequences of 12 positions, which tp 2, 3 and 4 divide.
constexpr int64_t kT = 12;

GPTConfig tiny_config(int tp) {
  GPTConfig c = test::tiny_tp_gpt_config(tp, 0.1f);
  c.block_size = kT;
  return c;
}

// Runs check(tp) for every tp group, native and ring, with sequence parallelism on (`overlap`: the
// split collectives).
template <typename Check>
void for_each_sp_group(Check check, bool overlap = true) {
  test::for_each_tp_comm(test::mpi_world(),
                         [&](dist::Comm& group, int) { check(TensorParallel{&group, true, overlap}); });
}

std::vector<std::string> sharded_names(const GPT& model) {
  std::vector<std::string> names;
  for (const auto& [name, info] : model.named_param_infos())
    if (info.split.sharded()) names.push_back(name);
  return names;
}

// One forward and backward on batch `step` (the replicated gradients summed over `tp`); the loss.
double forward_backward(const GPT& model, const TensorParallel& tp, int step, int64_t batch) {
  Generator dropout_gen(99 + step);
  Tensor idx = test::random_ids({batch, kT}, model.config().vocab_size, 4 + step);
  Tensor targets = test::random_ids({batch, kT}, model.config().vocab_size, 40 + step);
  targets.data<int32_t>()[7] = -1;
  GPT::Output out = model.forward(idx, &targets, dropout_gen);
  out.loss.backward();
  dist::sum_sequence_parallel_gradients(model, tp);
  return out.loss.data().item();
}

// The split model's values (or gradients) against the full model's, shard by shard.
void expect_matches_full(const GPT& split, const GPT& full, const TensorParallel& tp, bool grads) {
  const NamedParameters got = split.named_parameters(), want = full.named_parameters();
  const NamedParamInfos infos = split.named_param_infos();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string& name = want[i].first;
    ASSERT_EQ(got[i].first, name);
    const Tensor mine = grads ? got[i].second.grad() : got[i].second.data();
    const Tensor whole = grads ? want[i].second.grad() : want[i].second.data();
    Tensor gathered = dist::gather_full_tensor(*tp.comm, mine, infos[i].second.split);
    EXPECT_EQ(test::count_far(gathered, whole, kAtol, kRtol, name + (grads ? " grad" : " value")), 0);
  }
}

void expect_trains_like_the_one_rank_model(const TensorParallel& tp, int64_t batch) {
  SCOPED_TRACE(testing::Message() << "batch " << batch << (tp.overlap ? ", split collectives" : ", unsplit"));
  const GPTConfig c = tiny_config(tp.size());
  {
    Generator g1(3), g2(3);
    GPT full(c, g1);
    std::unique_ptr<GPT> made = dist::parallelize(c, g2, Device::cpu(), DType::F32, {tp, {}});
    GPT& split = *made;
    // Adam moves every parameter by about lr, whatever its gradient, so a gradient at the level
    // of f32 rounding would turn summation-order differences into lr-sized ones (they do, with the
    // plain tensor parallelism too): eps 1e-5 keeps such gradients' steps small.
    train::AdamWOptions adam;
    adam.eps = 1e-5;
    train::AdamW full_opt(full.named_parameters(), adam);
    train::AdamW split_opt(split.named_parameters(), adam);
    split_opt.set_tensor_parallel(tp.comm, sharded_names(split));
    for (int step = 0; step < kSteps; ++step) {
      SCOPED_TRACE(testing::Message() << "step " << step);
      full.zero_grad();
      split.zero_grad();
      const double want = forward_backward(full, TensorParallel{}, step, batch);
      const double got = forward_backward(split, tp, step, batch);
      EXPECT_NEAR(got, want, kRtol * std::fabs(want));
      if (step == 0) expect_matches_full(split, full, tp, /*grads=*/true);
      const double want_norm = full_opt.step(kLr, kClip);
      const double got_norm = split_opt.step(kLr, kClip);
      EXPECT_GT(want_norm, kClip) << "clipping must be active";
      EXPECT_NEAR(got_norm, want_norm, kRtol * want_norm);
    }
    expect_matches_full(split, full, tp, /*grads=*/false);
  }
}

TEST(SequenceParallelGPT, TrainsLikeTheOneRankModel) {
  for_each_sp_group([](const TensorParallel& tp) { expect_trains_like_the_one_rank_model(tp, 3); });
}

TEST(SequenceParallelGPT, TrainsLikeTheOneRankModelAtMicroBatchOne) {
  for_each_sp_group([](const TensorParallel& tp) { expect_trains_like_the_one_rank_model(tp, 1); });
}

TEST(SequenceParallelGPT, UnsplitCollectivesTrainLikeTheOneRankModel) {
  for_each_sp_group([](const TensorParallel& tp) { expect_trains_like_the_one_rank_model(tp, 3); },
                    /*overlap=*/false);
}

// Host bytes alive after a forward (what autograd keeps for backward; the CPU has no caching
// allocator, tensor/memory_stats.h), for `tp`'s model.
size_t kept_bytes(const TensorParallel& tp) {
  GPTConfig c = tiny_config(tp.size());
  c.n_layer = 4;
  Generator g(3), dropout_gen(5);
  std::unique_ptr<GPT> model = dist::parallelize(c, g, Device::cpu(), DType::F32, {tp, {}});
  Tensor idx = test::random_ids({4, kT}, c.vocab_size, 4);
  const size_t before = host_memory_stats().current_bytes;
  GPT::Output out = model->forward(idx, &idx, dropout_gen);
  return host_memory_stats().current_bytes - before;
}

// Sequence parallelism keeps the LayerNorm inputs, the residual stream and each column-parallel
// linear's input as 1 / tp shares: the whole saved activations shrink (the attention and MLP
// interiors are 1 / tp in both).
TEST(SequenceParallelGPT, KeepsFewerActivationsThanPlainTensorParallelism) {
  test::for_each_tp_comm(test::mpi_world(), [](dist::Comm& group, int) {
    const size_t plain = kept_bytes(TensorParallel{&group, false});
    const size_t split = kept_bytes(TensorParallel{&group, true});
    EXPECT_LT(split, plain) << "sequence-parallel " << split << " bytes, plain tp " << plain;
  });
}

TEST(SequenceParallelGPT, ASequenceTheGroupDoesNotDivideIsAnError) {
  for_each_sp_group([](const TensorParallel& tp) {
    const GPTConfig c = tiny_config(tp.size());
    Generator g(3), dropout_gen(1);
    std::unique_ptr<GPT> split = dist::parallelize(c, g, Device::cpu(), DType::F32, {tp, {}});
    Tensor idx = test::random_ids({2, tp.size() + 1}, c.vocab_size, 4);
    try {
      split->forward(idx, &idx, dropout_gen);
      ADD_FAILURE() << "no error for a sequence of " << tp.size() + 1;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not divide the sequence length of " + std::to_string(tp.size() + 1)),
                std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace nd::nn
