// CUDA fused cross-entropy against the CPU kernel through ops::cross_entropy: loss and dlogits,
// padded vocabulary, ignored targets (-1), f32 and bf16.
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

// seed_grads false: the logits have no gradient yet, and the GPU writes it instead of adding.
void check_cross_entropy(DType dtype, int64_t B, int64_t T, int64_t Vp, int64_t V, bool seed_grads = true) {
  Generator gen(fresh_seed());
  std::vector<int32_t> t(B * T);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 5 == 3 ? -1 : static_cast<int32_t>(gen.next_u64() % V);
  Tensor targets = Tensor::from_vector(t, {B, T});
  Tensor targets_gpu = targets.to(Device::cuda(0));
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        return ops::cross_entropy(v[0], device.is_cpu() ? targets : targets_gpu, V);
      },
      {random_input({B, T, Vp}, gen, dtype, 3.0)}, {true}, dtype, gen,
      "cross_entropy " + std::string(dtype_name(dtype)), seed_grads);
}

TEST(CrossEntropyCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_cross_entropy(DType::F32, 2, 9, 256, 200);
  check_cross_entropy(DType::F32, 3, 4, 67, 65);  // rows not 16-byte aligned: scalar path
  check_cross_entropy(DType::F32, 2, 3, 1024, 1024);
  check_cross_entropy(DType::F32, 2, 9, 256, 200, false);
  check_cross_entropy(DType::F32, 3, 4, 67, 65, false);
}

TEST(CrossEntropyCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_cross_entropy(DType::BF16, 2, 9, 384, 300);
  check_cross_entropy(DType::BF16, 1, 5, 65, 65);
  check_cross_entropy(DType::BF16, 2, 9, 384, 300, false);
}

}  // namespace
}  // namespace nd::test
