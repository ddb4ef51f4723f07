// Dropout whose first Philox counter lives in device memory (a generator anchored to it, as the
// training step runs): the GPU kernels read the counter when they run, and draw exactly the masks
// the CPU draws from the same counters without an anchor. Elementwise dropout and attention
// dropout (tensor-core bf16 and the general kernels), forward and backward.
#include "autograd/ops.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

constexpr uint64_t kCounter = 4099;  // the step's first counter, in device memory

// A counter on cuda:0 holding `value` (a u64 as two i32 words).
Tensor device_counter(uint64_t value) {
  return Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(static_cast<uint32_t>(value)),
                                                  static_cast<int32_t>(static_cast<uint32_t>(value >> 32))},
                             Shape{2})
      .to(Device::cuda(0));
}

// The generator of one op call: on the CPU plainly at kCounter; on the GPU anchored to the device
// counter while its own offset says something else, so only a kernel that reads the counter on
// the device draws the CPU's mask.
Generator mask_generator(uint64_t seed, Device device, const Tensor& counter) {
  Generator gen(seed, 3);
  if (device.is_cpu()) {
    gen.set_offset(kCounter);
  } else {
    gen.set_offset(123456789);
    gen.anchor(static_cast<const uint64_t*>(counter.raw_data()));
  }
  return gen;
}

TEST(AnchoredDropoutCuda, ElementwiseDropoutReadsTheDeviceCounter) {
  ND_SKIP_WITHOUT_GPU();
  Tensor counter = device_counter(kCounter);
  for (DType dtype : {DType::F32, DType::BF16}) {
    Generator gen(test_seed());
    const uint64_t mask_seed = gen.next_u64();
    for (Shape shape : {Shape{8, 128}, Shape{1001}}) {
      check_op_against_cpu(
          [&](const std::vector<Variable>& v, Device device) {
            Generator mask_gen = mask_generator(mask_seed, device, counter);
            return ops::dropout(v[0], 0.3f, mask_gen, true);
          },
          {random_input(shape, gen, dtype)}, {true}, dtype, gen, "anchored dropout " + std::string(dtype_name(dtype)));
    }
  }
}

TEST(AnchoredDropoutCuda, AttentionDropoutReadsTheDeviceCounter) {
  ND_SKIP_WITHOUT_GPU();
  Tensor counter = device_counter(kCounter);
  struct Case {
    DType dtype;
    int64_t T, NH, hs;
  };
  // bf16 with head size 64 runs the tensor-core kernels; f32 and head size 32 the general ones.
  for (Case c : {Case{DType::BF16, 128, 2, 64}, Case{DType::BF16, 100, 2, 64}, Case{DType::F32, 77, 3, 32}}) {
    Generator gen(test_seed());
    const uint64_t mask_seed = gen.next_u64();
    const int64_t B = 2, C = c.NH * c.hs;
    check_op_against_cpu(
        [&](const std::vector<Variable>& v, Device device) {
          Generator mask_gen = mask_generator(mask_seed, device, counter);
          return ops::attention(v[0], static_cast<int>(c.NH), 0.2f, &mask_gen, true);
        },
        {random_input({B, c.T, 3 * C}, gen, c.dtype)}, {true}, c.dtype, gen,
        "anchored attention " + std::string(dtype_name(c.dtype)) + " T=" + std::to_string(c.T));
  }
}

// Under tensor parallelism a rank's heads draw the unsplit model's masks of those heads, also
// when the counter is on the device: heads [1, 3) of 4 against the CPU's.
TEST(AnchoredDropoutCuda, AttentionAtAHeadOffsetReadsTheDeviceCounter) {
  ND_SKIP_WITHOUT_GPU();
  Tensor counter = device_counter(kCounter);
  Generator gen(test_seed());
  const uint64_t mask_seed = gen.next_u64();
  const int64_t B = 2, T = 64, local = 2, hs = 64;
  check_op_against_cpu(
      [&](const std::vector<Variable>& v, Device device) {
        Generator mask_gen = mask_generator(mask_seed, device, counter);
        return ops::attention(v[0], static_cast<int>(local), 0.25f, &mask_gen, true, 1, 4);
      },
      {random_input({B, T, 3 * local * hs}, gen, DType::BF16)}, {true}, DType::BF16, gen,
      "anchored attention, heads 1..2 of 4");
}

}  // namespace
}  // namespace nd::test
