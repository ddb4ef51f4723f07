// CUDA flash attention against the CPU kernel through ops::attention: output and dqkv, sequence
// lengths that are not a multiple of the tile, head sizes 32, 64, 128 and 8, f32 and bf16, without
// and with dropout on the probabilities (the kernels must drop exactly the CPU's elements), and
// every tiling variant of the bf16 tensor-core forward.
#include "autograd/ops.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_attention(DType dtype, int64_t B, int64_t T, int64_t NH, int64_t hs, float dropout = 0.0f) {
  Generator gen(test_seed());
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

// The bf16 tensor-core forward in tiling variant `variant` (ops::attention runs the default, 0):
// its output against the CPU's, its lse against the default variant's (all backward reads of the
// forward besides qkv).
void check_forward_variant(int variant, int64_t B, int64_t T, int64_t NH, int64_t hs, float dropout = 0.0f) {
  std::printf("[ variant  ] %d\n", variant);
  Generator gen(test_seed());
  const int64_t C = NH * hs;
  Tensor qkv = random_input({B, T, 3 * C}, gen, DType::BF16);
  uint64_t mask_seed = gen.next_u64();
  Generator cpu_gen(mask_seed, 3), gpu_gen(mask_seed, 3);
  cpu_gen.set_offset(17);
  gpu_gen.set_offset(17);
  Tensor expected = ops::attention(Variable(qkv), static_cast<int>(NH), dropout, &cpu_gen, true).data();
  AttentionDropout drop;  // as ops::attention draws it
  if (dropout > 0.0f) {
    drop.p = dropout;
    drop.seed = gpu_gen.seed();
    drop.stream = gpu_gen.stream();
    drop.first = gpu_gen.advance(static_cast<uint64_t>(B * NH * T * T));
  }
  Tensor x = on_gpu(qkv, DType::BF16);
  Tensor out[2], lse[2];
  for (int k = 0; k < 2; ++k) {
    out[k] = Tensor::empty({B, T, C}, DType::BF16, Device::cuda(0));
    lse[k] = Tensor::empty({B, NH, T}, DType::F32, Device::cuda(0));
    cuda::detail::attention_forward_mma(x.data<bf16>(), out[k].data<bf16>(), lse[k].data<float>(), B, T, C, NH, drop,
                                        compute_stream(0), k == 0 ? variant : 0);
  }
  Tolerance tol = tolerance_for(DType::BF16);
  const std::string what = "attention forward variant " + std::to_string(variant) + " T=" + std::to_string(T) +
                           " hs=" + std::to_string(hs) + " dropout=" + std::to_string(dropout);
  expect_close(out[0], expected, tol.atol_rel, tol.rtol, what);
  expect_close(lse[0], lse[1], 1e-5, 1e-5, what + " lse");
}

TEST(AttentionCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(DType::F32, 2, 37, 3, 64);
  check_attention(DType::F32, 1, 100, 2, 32);
  check_attention(DType::F32, 2, 20, 1, 128);
  check_attention(DType::F32, 1, 9, 2, 8);
}

// The default tiling through the op (forward and backward), and every tiling variant of the
// tensor-core forward.
TEST(AttentionCuda, Bf16HeadSize64) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(DType::BF16, 2, 37, 2, 64);
  check_attention(DType::BF16, 1, 150, 2, 64);
  check_attention(DType::BF16, 1, 128, 1, 64);
  check_attention(DType::BF16, 1, 300, 1, 64);
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant) {
    check_forward_variant(variant, 2, 37, 2, 64);
    check_forward_variant(variant, 1, 150, 2, 64);
    check_forward_variant(variant, 1, 128, 1, 64);
    check_forward_variant(variant, 1, 300, 1, 64);
  }
}

TEST(AttentionCuda, Bf16OtherHeadSizes) {
  ND_SKIP_WITHOUT_GPU();
  check_attention(DType::BF16, 1, 70, 2, 128);
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant)
    check_forward_variant(variant, 1, 70, 2, 128);
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
  check_attention(DType::BF16, 2, 37, 2, 64, 0.2f);
  check_attention(DType::BF16, 1, 150, 2, 64, 0.2f);
  check_attention(DType::BF16, 1, 70, 2, 128, 0.2f);
  for (int variant = cuda::detail::attention_forward_variant_count() - 1; variant >= 0; --variant) {
    check_forward_variant(variant, 2, 37, 2, 64, 0.2f);
    check_forward_variant(variant, 1, 150, 2, 64, 0.2f);
    check_forward_variant(variant, 1, 70, 2, 128, 0.2f);
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
