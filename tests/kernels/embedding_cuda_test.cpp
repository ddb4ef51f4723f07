// CUDA embedding against the CPU kernel through ops::embedding (f32, bf16), and the backward's
// determinism: two runs give bitwise-identical dwte, also with heavily repeated token ids.
#include <cstring>

#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

Tensor random_ids(const Shape& shape, int64_t vocab, Generator& gen) {
  std::vector<int32_t> ids(shape_numel(shape));
  for (auto& id : ids) id = static_cast<int32_t>(gen.next_u64() % vocab);
  return Tensor::from_vector(ids, shape);
}

void check_embedding(DType dtype, int64_t B, int64_t T, int64_t V, int64_t C) {
  Generator gen(test_seed());
  Tensor idx = random_ids({B, T}, V, gen);
  Tensor idx_gpu = idx.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::embedding(device.is_cpu() ? idx : idx_gpu, v[0], v[1]);
      },
      {random_input({V, C}, gen, dtype), random_input({T + 3, C}, gen, dtype)}, {true, true}, dtype, gen,
      "embedding " + std::string(dtype_name(dtype)));
}

TEST(EmbeddingCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_embedding(DType::F32, 3, 9, 50, 24);
  check_embedding(DType::F32, 4, 70, 5, 40);  // few ids: long runs across several chunks
}

TEST(EmbeddingCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_embedding(DType::BF16, 2, 33, 65, 64);
}

TEST(EmbeddingCuda, BackwardIsBitwiseDeterministic) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  const int64_t B = 8, T = 128, V = 7, C = 96;
  Tensor idx = random_ids({B, T}, V, gen).to(Device::cuda(0));
  Tensor wte = on_gpu(random_input({V, C}, gen, DType::F32), DType::F32);
  Tensor wpe = on_gpu(random_input({T, C}, gen, DType::F32), DType::F32);
  Tensor dout = on_gpu(random_input({B, T, C}, gen, DType::F32), DType::F32);
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    Variable w(wte, true), p(wpe, true);
    ops::embedding(idx, w, p).backward(dout);
    std::vector<float> grad = w.grad().to_float_vector();
    if (run == 0) {
      first = grad;
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), grad.data(), first.size() * sizeof(float))) << "run " << run;
    }
  }
}

TEST(EmbeddingCuda, RejectsOutOfRangeIds) {
  ND_SKIP_WITHOUT_GPU();
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{0, 1, 9}, {1, 3}).to(Device::cuda(0));
  Variable wte(Tensor::zeros({5, 8}, DType::F32, Device::cuda(0)), true);
  Variable wpe(Tensor::zeros({4, 8}, DType::F32, Device::cuda(0)), true);
  // Recorded on the device by the op (no host sync), raised by the check.
  EXPECT_THROW(
      {
        ops::embedding(idx, wte, wpe);
        ops::check_recorded_token_ids(Device::cuda(0));
      },
      Error);
}

}  // namespace
}  // namespace nd::test
