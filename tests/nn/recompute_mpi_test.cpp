// Activation recomputation under tensor parallelism, for every tp that divides the world, native
// and ring collectives, with and without sequence parallelism: with dropout, over two accumulated
// micro-batches, --recompute attention and block give each rank the losses and gradients of the
// recorded model bit for bit (the rerun repeats the region's collectives and masks), and the rerun
// runs every forward collective of a block but the MLP output projection's.
#include <gtest/gtest.h>

#include <cstring>

#include "dist/comm/world.h"
#include "dist/parallel/parallelize.h"
#include "dist/parallel/sequence_parallel.h"
#include "nn/gpt.h"
#include "tests/dist/counting_comm.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

using dist::TensorParallel;

struct Result {
  std::vector<double> losses;
  std::vector<Tensor> grads;
};

Result train_micro_batches(const TensorParallel& tp, Recompute mode) {
  GPTConfig c = test::tiny_tp_gpt_config(tp.size(), 0.1f);
  c.block_size = 12;  // sequence parallelism splits the sequence: tp 2, 3 and 4 divide 12
  c.recompute = mode;
  Generator init(3);
  std::unique_ptr<GPT> made = dist::parallelize(c, init, Device::cpu(), DType::F32, {tp, {}});
  const GPT& model = *made;
  Generator dropout_gen(99);
  Result r;
  for (int micro = 0; micro < 2; ++micro) {
    Tensor idx = test::random_ids({6, 12}, c.vocab_size, 4 + micro);
    Tensor targets = test::random_ids({6, 12}, c.vocab_size, 40 + micro);
    GPT::Output out = model.forward(idx, &targets, dropout_gen);
    out.loss.backward(Tensor::full({}, 0.5));
    r.losses.push_back(out.loss.data().item());
  }
  dist::sum_sequence_parallel_gradients(model, tp);
  for (const Variable& p : model.parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

void check_modes(const TensorParallel& tp) {
  const Result want = train_micro_batches(tp, Recompute::None);
  for (Recompute mode : {Recompute::Attention, Recompute::Block}) {
    SCOPED_TRACE(mode == Recompute::Attention ? "attention" : "block");
    const Result got = train_micro_batches(tp, mode);
    EXPECT_EQ(got.losses, want.losses);
    ASSERT_EQ(got.grads.size(), want.grads.size());
    int64_t differing = 0;
    for (size_t i = 0; i < want.grads.size(); ++i)
      differing += std::memcmp(got.grads[i].raw_data(), want.grads[i].raw_data(), want.grads[i].nbytes()) != 0;
    EXPECT_EQ(differing, 0) << "parameters whose gradient differs";
  }
}

TEST(RecomputeTensorParallel, EqualsTheRecordedModelBitForBit) {
  test::for_each_tp_group(test::mpi_world(), check_modes);
}

TEST(RecomputeTensorParallel, EqualsTheRecordedModelBitForBitUnderSequenceParallelism) {
  test::for_each_tp_group(test::mpi_world(), check_modes, /*sequence_parallel=*/true);
}

// The collectives of one forward and backward through `tp`, counted (unsplit: one per op).
test::CallLog collectives_of_a_step(const TensorParallel& tp, Recompute mode) {
  auto log = std::make_shared<test::CallLog>();
  test::CountingComm counting(*tp.comm, log);
  const TensorParallel counted{&counting, tp.sequence_parallel, /*overlap=*/false};
  GPTConfig c = test::tiny_tp_gpt_config(tp.size(), 0.1f);
  c.block_size = 12;
  c.recompute = mode;
  Generator init(3), dropout_gen(99);
  std::unique_ptr<GPT> model = dist::parallelize(c, init, Device::cpu(), DType::F32, {counted, {}});
  Tensor idx = test::random_ids({6, 12}, c.vocab_size, 4), targets = test::random_ids({6, 12}, c.vocab_size, 40);
  model->forward(idx, &targets, dropout_gen).loss.backward();
  return *log;
}

// The rerun repeats the forward collectives of a block but the MLP c_proj's (its all-reduce, or its
// reduce-scatter under sequence parallelism), whose sum backward does not read; backward's all run.
void check_rerun_collectives(const TensorParallel& tp) {
  const test::CallLog none = collectives_of_a_step(tp, Recompute::None);
  test::CallLog extra = collectives_of_a_step(tp, Recompute::Block);
  for (const auto& [call, n] : none) extra[call] -= n;
  const GPTConfig c = test::tiny_tp_gpt_config(tp.size(), 0.1f);
  const int64_t activation = int64_t{6} * 12 * c.n_embd * 4;  // (B, T, C) f32: a whole layer output
  test::CallLog want;
  if (tp.sequence_parallel) {
    want[{"allgather", tp.size(), activation}] = 2 * c.n_layer;      // c_attn's and c_fc's inputs
    want[{"reducescatter", tp.size(), activation}] = c.n_layer;      // attention c_proj's sums only
  } else {
    want[{"allreduce", tp.size(), activation}] = c.n_layer;          // attention c_proj's sum only
  }
  for (const auto& [call, n] : extra)
    EXPECT_EQ(n, want.count(call) ? want.at(call) : 0)
        << std::get<0>(call) << " of " << std::get<2>(call) << " bytes: calls the rerun added";
  for (const auto& [call, n] : want) EXPECT_EQ(extra.count(call) ? extra.at(call) : 0, n) << std::get<0>(call);
}

TEST(RecomputeTensorParallel, TheRerunSkipsTheMlpProjectionsCollective) {
  test::for_each_tp_group(test::mpi_world(), check_rerun_collectives);
  test::for_each_tp_group(test::mpi_world(), check_rerun_collectives, /*sequence_parallel=*/true);
}

}  // namespace
}  // namespace nd::nn
