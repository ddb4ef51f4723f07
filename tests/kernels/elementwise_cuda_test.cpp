// CUDA gelu, add and dropout against the CPU kernels through the ops, f32 and bf16; sizes that
// are not a multiple of the 16-byte pack exercise the tail path.
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

const DType kTypes[] = {DType::F32, DType::BF16};

TEST(GeluCuda, MatchesCpu) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : kTypes) {
    Generator gen(test_seed());
    for (Shape shape : {Shape{4, 256}, Shape{1003}}) {
      check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::gelu(v[0]); },
                           {random_input(shape, gen, dtype, 2.0)}, {true}, dtype, gen,
                           "gelu " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(AddCuda, MatchesCpu) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : kTypes) {
    Generator gen(test_seed());
    for (Shape shape : {Shape{3, 5, 64}, Shape{999}}) {
      check_op_against_cpu([](const std::vector<Variable>& v, Device) { return ops::add(v[0], v[1]); },
                           {random_input(shape, gen, dtype), random_input(shape, gen, dtype)}, {true, true}, dtype,
                           gen, "add " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(DropoutCuda, SameMaskAsCpu) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : kTypes) {
    Generator gen(test_seed());
    uint64_t mask_seed = gen.next_u64();
    for (float p : {0.2f, 0.5f, 1.0f}) {
      for (Shape shape : {Shape{8, 128}, Shape{1001}}) {
        // A fresh generator per call: the CPU and GPU runs draw the same counters.
        check_op_against_cpu(
            [mask_seed, p](const std::vector<Variable>& v, Device) {
              Generator mask_gen(mask_seed, 3);
              mask_gen.set_offset(17);
              return ops::dropout(v[0], p, mask_gen, true);
            },
            {random_input(shape, gen, dtype)}, {true}, dtype, gen, "dropout " + std::string(dtype_name(dtype)));
      }
    }
  }
}

}  // namespace
}  // namespace nd::test
