// CUDA linear (cuBLASLt) against the CPU kernel through ops::linear: output, dx, dw, db, f32 and bf16.
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_linear(DType dtype, const Shape& x_shape, int64_t N, bool bias) {
  Generator gen(test_seed());
  int64_t K = x_shape.back();
  std::vector<Tensor> inputs = {random_input(x_shape, gen, dtype), random_input({N, K}, gen, dtype, 0.3)};
  if (bias) inputs.push_back(random_input({N}, gen, dtype));
  check_op_against_cpu(
      [bias](const std::vector<Variable>& v, Device) { return ops::linear(v[0], v[1], bias ? v[2] : Variable()); },
      inputs, std::vector<bool>(inputs.size(), true), dtype, gen, "linear " + std::string(dtype_name(dtype)));
}

TEST(LinearCuda, F32WithBias) {
  ND_SKIP_WITHOUT_GPU();
  check_linear(DType::F32, {3, 7, 24}, 40, true);
  check_linear(DType::F32, {33, 72}, 96, true);
}

TEST(LinearCuda, F32NoBiasOddSizes) {
  ND_SKIP_WITHOUT_GPU();
  check_linear(DType::F32, {5, 13}, 7, false);
}

TEST(LinearCuda, Bf16WithBias) {
  ND_SKIP_WITHOUT_GPU();
  check_linear(DType::BF16, {2, 9, 64}, 192, true);
  check_linear(DType::BF16, {17, 40}, 24, true);
}

TEST(LinearCuda, Bf16NoBias) {
  ND_SKIP_WITHOUT_GPU();
  check_linear(DType::BF16, {4, 8, 32}, 48, false);
}

}  // namespace
}  // namespace nd::test
