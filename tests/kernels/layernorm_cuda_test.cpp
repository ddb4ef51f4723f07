// CUDA layernorm against the CPU kernel through ops::layernorm: output, dx, dw, db, f32 and bf16.
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_layernorm(DType dtype, const Shape& shape) {
  Generator gen(fresh_seed());
  int64_t C = shape.back();
  std::vector<Tensor> inputs = {random_input(shape, gen, dtype, 2.0), random_input({C}, gen, dtype),
                                random_input({C}, gen, dtype)};
  check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::layernorm(v[0], v[1], v[2]); },
                       inputs, {true, true, true}, dtype, gen, "layernorm " + std::string(dtype_name(dtype)));
}

TEST(LayernormCuda, F32) {
  ND_SKIP_WITHOUT_GPU();
  check_layernorm(DType::F32, {3, 5, 64});
  check_layernorm(DType::F32, {7, 37});
  check_layernorm(DType::F32, {1100, 48});  // more than one slab in the dw/db reduction
}

TEST(LayernormCuda, Bf16) {
  ND_SKIP_WITHOUT_GPU();
  check_layernorm(DType::BF16, {4, 9, 96});
  check_layernorm(DType::BF16, {5, 33});
}

}  // namespace
}  // namespace nd::test
