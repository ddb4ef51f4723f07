// The tensor-parallel ops on the GPU against the CPU reference (f32, bf16): the vocabulary-
// parallel cross-entropy of a rank holding an offset range with padding, the vocabulary-parallel
// embedding with ids inside and outside the rank's rows (and its bitwise-deterministic backward),
// add_bias and add_positions, attention dropout of a rank's heads at a head offset; and, through
// a one-rank communicator on the GPU, the vocabulary-parallel cross-entropy equals the fused one.
#include <cstring>

#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "dist/comm/local_comm.h"
#include "dist/parallel/tp_mappings.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

const ops::RowStatsReduce kOneRank = [](Tensor&) {};

Tensor ids_in(const Shape& shape, int64_t vocab, Generator& gen, bool with_ignored) {
  std::vector<int32_t> ids(shape_numel(shape));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = with_ignored && i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % vocab);
  return Tensor::from_vector(ids, shape);
}

// A rank holding columns [vocab_start, vocab_start + Vl) of a vocabulary of V.
void check_vocab_cross_entropy(DType dtype, int64_t N, int64_t Vl, int64_t vocab_start, int64_t V, bool seed_grads) {
  Generator gen(test_seed());
  Tensor targets = ids_in({N}, V, gen, true);
  Tensor targets_gpu = targets.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::vocab_parallel_cross_entropy(v[0], device.is_cpu() ? targets : targets_gpu, vocab_start, V,
                                                 kOneRank, kOneRank);
      },
      {random_input({N, Vl}, gen, dtype, 3.0)}, {true}, dtype, gen,
      "vocab_parallel_cross_entropy " + std::string(dtype_name(dtype)), seed_grads, ops::loss_dtype(dtype));
}

TEST(TensorParallelOpsCuda, VocabParallelCrossEntropy) {
  ND_SKIP_WITHOUT_GPU();
  for (bool seed : {true, false}) {
    check_vocab_cross_entropy(DType::F32, 18, 256, 256, 400, seed);  // padding at the end
    check_vocab_cross_entropy(DType::F32, 12, 67, 67, 100, seed);    // unaligned rows: scalar path
    check_vocab_cross_entropy(DType::F32, 7, 128, 0, 1000, seed);    // no padding, offset 0
    check_vocab_cross_entropy(DType::BF16, 18, 384, 384, 700, seed);
  }
}

TEST(TensorParallelOpsCuda, VocabParallelCrossEntropyOnOneRankIsTheFusedOne) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  dist::LocalComm one(Device::cuda(0));
  Tensor targets = ids_in({3, 6}, 200, gen, true).to(Device::cuda(0));
  Tensor logits = on_gpu(random_input({3, 6, 256}, gen, DType::F32, 3.0), DType::F32);
  Variable a(logits.clone(), true), b(logits.clone(), true);
  Variable la = dist::vocab_parallel_cross_entropy(a, targets, 200, dist::TensorParallel{&one});
  Variable lb = ops::cross_entropy(b, targets, 200);
  expect_close(la.data(), lb.data(), 1e-6, 1e-6, "loss");
  la.backward();
  lb.backward();
  expect_close(a.grad(), b.grad(), 1e-6, 1e-5, "dlogits");
}

void check_vocab_embedding(DType dtype, int64_t B, int64_t T, int64_t Vl, int64_t vocab_start, int64_t C) {
  Generator gen(test_seed());
  const int64_t vocab_rows = vocab_start + 2 * Vl;
  Tensor idx = ids_in({B, T}, vocab_rows, gen, false);
  Tensor idx_gpu = idx.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::vocab_parallel_embedding(device.is_cpu() ? idx : idx_gpu, v[0], vocab_start, vocab_rows);
      },
      {random_input({Vl, C}, gen, dtype)}, {true}, dtype, gen,
      "vocab_parallel_embedding " + std::string(dtype_name(dtype)));
}

TEST(TensorParallelOpsCuda, VocabParallelEmbedding) {
  ND_SKIP_WITHOUT_GPU();
  check_vocab_embedding(DType::F32, 3, 9, 50, 50, 24);
  check_vocab_embedding(DType::F32, 4, 70, 5, 5, 40);  // few ids: long runs across chunks
  check_vocab_embedding(DType::F32, 2, 16, 33, 0, 8);  // rank 0 of the range
  check_vocab_embedding(DType::BF16, 2, 33, 64, 64, 64);
}

TEST(TensorParallelOpsCuda, VocabParallelEmbeddingBackwardIsBitwiseDeterministic) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  const int64_t B = 8, T = 128, Vl = 7, C = 96;
  Tensor idx = ids_in({B, T}, 3 * Vl, gen, false).to(Device::cuda(0));
  Tensor wte = on_gpu(random_input({Vl, C}, gen, DType::F32), DType::F32);
  Tensor dout = on_gpu(random_input({B, T, C}, gen, DType::F32), DType::F32);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    Variable w(wte, true);
    ops::vocab_parallel_embedding(idx, w, Vl, 3 * Vl).backward(dout);
    std::vector<float> grad = w.grad().to_float_vector();
    if (run == 0) {
      first = grad;
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), grad.data(), first.size() * sizeof(float))) << "run " << run;
    }
  }
}

TEST(TensorParallelOpsCuda, AddBiasAndPositions) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::F32, DType::BF16}) {
    Generator gen(test_seed());
    const std::string name = dtype_name(dtype);
    check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::add_bias(v[0], v[1]); },
                         {random_input({4, 7, 64}, gen, dtype), random_input({64}, gen, dtype)}, {true, true}, dtype,
                         gen, "add_bias " + name);
    check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::add_bias(v[0], v[1]); },
                         {random_input({5, 3, 13}, gen, dtype), random_input({13}, gen, dtype)}, {true, true}, dtype,
                         gen, "add_bias unaligned " + name);
    check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::add_positions(v[0], v[1]); },
                         {random_input({3, 5, 32}, gen, dtype), random_input({9, 32}, gen, dtype)}, {true, true},
                         dtype, gen, "add_positions " + name);
  }
}

// Heads [2, 4) of a model of 6 heads, with dropout: the GPU draws the masks the CPU draws.
TEST(TensorParallelOpsCuda, AttentionDropoutAtAHeadOffset) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (int64_t hs : {16, 64}) {
      Generator gen(test_seed());
      const uint64_t drop_seed = gen.next_u64();
      const int64_t B = 2, T = 37, NH = 2, C = NH * hs;
      check_op_against_cpu(
          [&](const std::vector<Variable>& v, Device) {
            Generator drop(drop_seed);
            return ops::attention(v[0], NH, 0.3f, &drop, true, 2, 6);
          },
          {random_input({B, T, 3 * C}, gen, dtype)}, {true}, dtype, gen,
          "attention at a head offset " + std::string(dtype_name(dtype)) + " hs " + std::to_string(hs));
    }
  }
}

}  // namespace
}  // namespace nd::test
