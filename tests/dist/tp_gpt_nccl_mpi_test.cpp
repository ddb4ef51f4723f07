// Tensor parallelism on NCCL under mpirun, one rank per GPU: the mappings against closed-form sums
// with the native and the ring all-reduce, the tensor-parallel GPT (f32, with and without
// dropout) against the tp = 1 GPT on the same GPU: loss and gradients gathered over the group, and
// one clipped AdamW step (the global norm split over the group on the device) against tp = 1; the
// same with sequence parallelism (its mappings against closed forms, the GPT with the replicated
// gradients summed over the group; split and unsplit collectives; micro-batch 1). Skips where there is no GPU or fewer GPUs than ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "autograd/ops.h"
#include "dist/parallel/parallelize.h"
#include "dist/parallel/sequence_parallel.h"
#include "dist/comm/world.h"
#include "nn/gpt.h"
#include "tests/dist/collective_inputs.h"
#include "tests/nn/tp_test_util.h"
#include "train/optimizer.h"

namespace nd::nn {
namespace {

using dist::TensorParallel;

bool enough_gpus() {
  if (!cuda_available()) return false;
  int gpus = 0, size = 1;
#if NANODIST_WITH_CUDA
  if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
#endif
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int enough = gpus >= size ? 1 : 0, all = 0;
  MPI_Allreduce(&enough, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

#define SKIP_WITHOUT_GPUS() \
  if (!enough_gpus()) GTEST_SKIP() << "needs one GPU per rank"

// One NCCL world for the binary, never destroyed (see tests/dist/nccl_ring_mpi_test.cpp).
dist::Comm& gpu_world() {
  static dist::Comm* comm = dist::make_world_comm(Device::cuda(0), false).release();
  return *comm;
}

TEST(TensorParallelNccl, MappingsSumOverTheGroup) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(gpu_world(), [](const TensorParallel& tp) {
    const int64_t n = 1000;
    const Device gpu = gpu_world().device();
    Variable x(test::rank_input(0, n, DType::F32, 1, gpu), true);
    Variable y = dist::copy_to_tp(x, tp);
    y.backward(test::rank_input(tp.rank(), n, DType::F32, 2, gpu));
    EXPECT_EQ(test::count_mismatches(x.grad().to_double_vector(), test::sum_over_ranks(tp.size(), n, 2), 0, "dx"), 0);
    Variable w(test::rank_input(tp.rank(), n, DType::F32, 3, gpu), true);
    Variable sum = dist::reduce_from_tp(ops::add(w, Variable(Tensor::zeros({n}, DType::F32, gpu))), tp);
    EXPECT_EQ(test::count_mismatches(sum.data().to_double_vector(), test::sum_over_ranks(tp.size(), n, 3), 0, "y"),
              0);
  });
}

// all_gather_from_sp concatenates the ranks' shares and reduce-scatters the gradient;
// reduce_scatter_to_sp sums this rank's share (n elements each).
TEST(TensorParallelNccl, SequenceParallelMappings) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(
      gpu_world(),
      [](const TensorParallel& tp) {
        const int64_t n = 1000;
        const Device gpu = gpu_world().device();
        // Shares are (..., T / tp, C): n tokens of width 1 a rank, gathered in rank order.
        Variable x(test::rank_input(tp.rank(), n, DType::F32, 1, gpu).view({1, n, 1}), true);
        Variable y = dist::all_gather_from_sp(x, tp);
        std::vector<double> gathered;
        for (int r = 0; r < tp.size(); ++r)
          for (int64_t i = 0; i < n; ++i) gathered.push_back(test::rank_value(r, i, 1));
        EXPECT_EQ(test::count_mismatches(y.data().to_double_vector(), gathered, 0, "gathered"), 0);
        y.backward(test::rank_input(tp.rank(), n * tp.size(), DType::F32, 2, gpu).view({1, n * tp.size(), 1}));
        EXPECT_EQ(test::count_mismatches(x.grad().to_double_vector(),
                                         test::sum_over_ranks(tp.size(), n, 2, tp.rank() * n), 0, "dx"),
                  0);
        Variable w(test::rank_input(tp.rank(), n * tp.size(), DType::F32, 3, gpu).view({1, n * tp.size(), 1}), true);
        Variable share = dist::reduce_scatter_to_sp(
            ops::add(w, Variable(Tensor::zeros({1, n * tp.size(), 1}, DType::F32, gpu))), tp);
        EXPECT_EQ(test::count_mismatches(share.data().to_double_vector(),
                                         test::sum_over_ranks(tp.size(), n, 3, tp.rank() * n), 0, "share"),
                  0);
      },
      /*sequence_parallel=*/true);
}

constexpr int64_t kBatch = 4;

GPTConfig tiny_config(const TensorParallel& tp, float dropout) {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.block_size = 16;
  c.vocab_size = 65;
  c.padded_vocab_size = padded_vocab_rows(c.vocab_size, tp.size(), true);
  c.dropout = dropout;
  return c;
}

// Forward and backward of one batch through the tp = 1 model and the tensor-parallel one; the loss
// of the tensor-parallel one must equal the other's. Under sequence parallelism the replicated
// gradients are then summed over the group, as the training step does.
void backward_both(const GPTConfig& c, GPT& full, GPT& split, const TensorParallel& tp, int64_t batch = kBatch) {
  const Device gpu = gpu_world().device();
  Tensor idx = test::random_ids({batch, 16}, c.vocab_size, 4).to(gpu);
  Tensor targets = test::random_ids({batch, 16}, c.vocab_size, 5).to(gpu);
  Generator d1(9), d2(9);
  GPT::Output want = full.forward(idx, &targets, d1);
  GPT::Output got = split.forward(idx, &targets, d2);
  want.loss.backward();
  got.loss.backward();
  dist::sum_sequence_parallel_gradients(split, tp);
  const double want_loss = want.loss.data().item();
  EXPECT_NEAR(got.loss.data().item(), want_loss, 1e-5 * want_loss);
}

// Every parameter of `split` (or its gradient), gathered over the group, against `full`'s.
void expect_gathered_equal(const TensorParallel& tp, const GPT& full, const GPT& split, bool grads) {
  const NamedParameters fp = full.named_parameters(), sp = split.named_parameters();
  const NamedParamInfos infos = split.named_param_infos();
  for (size_t i = 0; i < fp.size(); ++i) {
    const Tensor& shard = grads ? sp[i].second.grad() : sp[i].second.data();
    const Tensor& want = grads ? fp[i].second.grad() : fp[i].second.data();
    Tensor gathered = dist::gather_full_tensor(*tp.comm, shard, infos[i].second.split);
    EXPECT_EQ(test::count_far(gathered, want.to(Device::cpu()), 1e-6, 1e-4, fp[i].first + (grads ? " grad" : "")), 0);
  }
}

void check_gpt(const TensorParallel& tp, float dropout, int64_t batch = kBatch) {
  const GPTConfig c = tiny_config(tp, dropout);
  Generator g1(3), g2(3);
  GPT full(c, g1, gpu_world().device());
  std::unique_ptr<GPT> made = dist::parallelize(c, g2, gpu_world().device(), DType::F32, {tp, {}});
  GPT& split = *made;
  backward_both(c, full, split, tp, batch);
  expect_gathered_equal(tp, full, split, true);
}

// The global norm of the tensor-parallel model's gradients and one AdamW step clipped to a quarter
// of it equal the tp = 1 model's: the sharded gradients' squares are summed over the group once,
// the replicated ones counted once.
void check_clipped_step(const TensorParallel& tp) {
  const GPTConfig c = tiny_config(tp, 0.0f);
  Generator g1(3), g2(3);
  GPT full(c, g1, gpu_world().device());
  std::unique_ptr<GPT> made = dist::parallelize(c, g2, gpu_world().device(), DType::F32, {tp, {}});
  GPT& split = *made;
  backward_both(c, full, split, tp);
  // eps 1 makes the first update about lr x the clipped gradient (|g| << 1); with a small eps the
  // first Adam step is sign(g) whatever the clip factor, and a wrong factor would not show.
  train::AdamWOptions options;
  options.eps = 1.0;
  options.weight_decay = 0.0;
  train::AdamW want(full.named_parameters(), options), got(split.named_parameters(), options);
  std::vector<std::string> sharded;
  for (const auto& [name, info] : split.named_param_infos())
    if (info.split.sharded()) sharded.push_back(name);
  got.set_tensor_parallel(tp.comm, sharded);
  const double norm = want.grad_norm();
  EXPECT_NEAR(got.grad_norm(), norm, 1e-5 * norm);
  EXPECT_NEAR(got.step(1.0, norm / 4), want.step(1.0, norm / 4), 1e-5 * norm) << "the pre-clip norm";
  expect_gathered_equal(tp, full, split, false);
}

TEST(TensorParallelNccl, GPTEqualsTheOneRankModel) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(gpu_world(), [](const TensorParallel& tp) { check_gpt(tp, 0.0f); });
}

TEST(TensorParallelNccl, GPTEqualsTheOneRankModelWithDropout) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(gpu_world(), [](const TensorParallel& tp) { check_gpt(tp, 0.1f); });
}

TEST(TensorParallelNccl, ClippedStepEqualsTheOneRankStep) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(gpu_world(), [](const TensorParallel& tp) { check_clipped_step(tp); });
}

TEST(TensorParallelNccl, SequenceParallelEqualsTheOneRankModel) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_group(
      gpu_world(),
      [](const TensorParallel& tp) {
        if (16 % tp.size() != 0) return;  // sequence parallelism splits the 16 positions
        check_gpt(tp, 0.1f);
        check_clipped_step(tp);
      },
      /*sequence_parallel=*/true);
}

// Micro-batch 1 (the rank order is the sequence order) and the unsplit collectives (--tp-overlap
// false) against the one-rank model, on the native and the ring collectives.
TEST(TensorParallelNccl, SequenceParallelAtMicroBatchOneAndUnsplit) {
  SKIP_WITHOUT_GPUS();
  test::for_each_tp_comm(gpu_world(), [](dist::Comm& group, int tp) {
    if (16 % tp != 0) return;
    check_gpt(TensorParallel{&group, true, true}, 0.1f, 1);
    check_gpt(TensorParallel{&group, true, false}, 0.1f, 3);
  });
}

}  // namespace
}  // namespace nd::nn
