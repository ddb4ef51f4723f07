// CUDA flash attention against the CPU kernel through ops::attention: output and dqkv, sequence
// lengths that are not a multiple of the tile, head sizes 32, 64, 128 and 8, f32 and bf16, without
// and with dropout on the probabilities (the kernels must drop exactly the CPU's elements).
#include "autograd/ops.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_attention(DType dtype, int64_t B, int64_t T, int64_t NH, int64_t hs, float dropout = 0.0f) {
  Generator gen(fresh_seed());
  int64_t C = NH * hs;
  uint64_t mask_seed = gen.next_u64();
  // A fresh generator per call: the CPU and GPU runs draw the same counters.
  auto op = [NH, dropout, mask_seed](const std::vector<Variable>& v, Device) {
    Generator mask_gen(mask_seed, 3);
    mask_gen.set_offset(17);
    return ops::attention(v[0], static_cast<int>(NH), dropout, &mask_gen, true);
  };
  check_op_against_cpu(op, {random_input({B, T, 3 * C}, gen, dtype)}, {true}, dtype, gen,
                       "attention " + std::string(dtype_name(dtype)) + " T=" + std::to_string(T) +
                           " hs=" + std::to_string(hs) + " dropout=" + std::to_string(dropout));
}

TEST(AttentionCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(DType::F32, 2, 37, 3, 64);
  check_attention(DType::F32, 1, 100, 2, 32);
  check_attention(DType::F32, 2, 20, 1, 128);
  check_attention(DType::F32, 1, 9, 2, 8);
}

// Every tiling variant of the tensor-core forward (the default last, so it stays selected).
TEST(AttentionCuda, Bf16HeadSize64) {
  ND_SKIP_WITHOUT_GPU();
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant) {
    cuda::detail::set_attention_forward_variant(variant);
    std::printf("[ variant  ] %d\n", variant);
    check_attention(DType::BF16, 2, 37, 2, 64);
    check_attention(DType::BF16, 1, 150, 2, 64);
    check_attention(DType::BF16, 1, 128, 1, 64);
    check_attention(DType::BF16, 1, 300, 1, 64);
  }
}

TEST(AttentionCuda, Bf16OtherHeadSizes) {
  ND_SKIP_WITHOUT_GPU();
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant) {
    cuda::detail::set_attention_forward_variant(variant);
    check_attention(DType::BF16, 1, 70, 2, 128);
  }
  check_attention(DType::BF16, 2, 33, 2, 32);
}

TEST(AttentionCuda, F32Dropout) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(DType::F32, 2, 37, 3, 64, 0.2f);
  check_attention(DType::F32, 1, 100, 2, 32, 0.2f);
  check_attention(DType::F32, 1, 45, 1, 128, 0.2f);
  check_attention(DType::F32, 1, 9, 2, 8, 1.0f);
}

TEST(AttentionCuda, Bf16Dropout) {
  ND_SKIP_WITHOUT_GPU();
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant) {
    cuda::detail::set_attention_forward_variant(variant);
    std::printf("[ variant  ] %d\n", variant);
    check_attention(DType::BF16, 2, 37, 2, 64, 0.2f);
    check_attention(DType::BF16, 1, 150, 2, 64, 0.2f);
    check_attention(DType::BF16, 1, 70, 2, 128, 0.2f);
  }
  check_attention(DType::BF16, 2, 33, 2, 32, 0.2f);
  check_attention(DType::BF16, 1, 100, 1, 32, 0.2f);
}

TEST(AttentionCuda, RejectsUnsupportedHeadSize) {
  ND_SKIP_WITHOUT_GPU();
  Variable qkv(Tensor::zeros({1, 4, 3 * 2 * 12}, DType::F32, Device::cuda(0)), true);
  EXPECT_THROW(ops::attention(qkv, 2), Error);  // hs = 12 is not a multiple of 8
}

}  // namespace
}  // namespace nd::test
