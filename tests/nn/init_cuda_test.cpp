// Shard-local initialisation on the GPU (kernels/cuda/random_fill): a draw made by the kernel in
// device memory equals the CPU draw to within float rounding (the device's logf and cosf), and a
// rank's slice equals the same device's full draw, sliced, bit for bit, so tp = N starts from the
// tp = 1 weights on the GPU too. Also the device-side fills and conversions of Tensor.
#include <gtest/gtest.h>

#include "kernels/cuda_test_util.h"
#include "nn/init.h"

namespace nd::nn {
namespace {


TEST(InitCuda, KernelDrawMatchesTheCpuDraw) {
  ND_SKIP_WITHOUT_GPU();
  const uint64_t seed = test::test_seed();
  const Shape shape{333, 129};  // odd sizes: no element count a multiple of a block
  Generator cpu_gen(seed), gpu_gen(seed);
  cpu_gen.advance(77);
  gpu_gen.advance(77);
  const Tensor cpu = normal_shard(shape, 0.1, 0.02, cpu_gen, Placement{});
  const Tensor gpu = normal_shard(shape, 0.1, 0.02, gpu_gen, Placement{Device::cuda(0), DType::F32});
  test::expect_close(gpu, cpu, 1e-6, 1e-6, "f32 draw");
  // bf16: the f32 value rounded once; a last-bit difference in f32 may move it by one bf16 step.
  Generator bf16_gen(seed);
  bf16_gen.advance(77);
  const Tensor gpu_bf16 = normal_shard(shape, 0.1, 0.02, bf16_gen, Placement{Device::cuda(0), DType::BF16});
  test::expect_close(gpu_bf16, cpu.to(DType::BF16), 0.0, 1.0 / 128, "bf16 draw");
  EXPECT_EQ(gpu_gen.offset(), cpu_gen.offset());
}

TEST(InitCuda, ASliceIsTheFullDrawSlicedBitForBit) {
  ND_SKIP_WITHOUT_GPU();
  const uint64_t seed = test::test_seed();
  for (DType dtype : {DType::F32, DType::BF16}) {
    const Placement gpu{Device::cuda(0), dtype};
    for (ShardSpec spec : {ShardSpec{0, 1}, ShardSpec{0, 3}, ShardSpec{1, 1}, ShardSpec{}}) {
      for (int tp : {1, 2, 4}) {
        const Shape full_shape{12 * tp, 7 * tp};
        Generator full_gen(seed);
        const Tensor full = normal_shard(full_shape, 0.0, 1.0, full_gen, gpu).to(Device::cpu());
        for (int r = 0; r < tp; ++r) {
          Generator gen(seed);
          const Tensor shard = normal_shard(full_shape, 0.0, 1.0, gen, gpu, spec, r, tp);
          EXPECT_EQ(shard.to_double_vector(), nn::shard_of(full, spec, r, tp).to_double_vector())
              << dtype_name(dtype) << " dim " << spec.dim << " parts " << spec.parts << " rank " << r << " of " << tp;
        }
      }
    }
    Generator padded_gen(seed);
    Tensor padded = padded_rows_shard(20, 13, 5, 0.0, 1.0, padded_gen, gpu, 1, 2);  // rows 10..19: 10..12 drawn
    Generator whole_gen(seed);
    Tensor whole = normal_shard({13, 5}, 0.0, 1.0, whole_gen, gpu).to(Device::cpu());
    std::vector<double> expected = whole.narrow(10, 3).to_double_vector();
    expected.resize(50, 0.0);
    EXPECT_EQ(padded.to_double_vector(), expected) << dtype_name(dtype) << " padded rows";
  }
}

TEST(InitCuda, FillAndConvertStayOnTheDevice) {
  ND_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::F32, DType::BF16, DType::F64, DType::I32}) {
    Tensor ones = Tensor::ones({1001}, dtype, Device::cuda(0));
    EXPECT_EQ(ones.to_double_vector(), std::vector<double>(1001, 1.0)) << dtype_name(dtype);
    ones.fill_(-3.0);
    EXPECT_EQ(ones.to_double_vector(), std::vector<double>(1001, -3.0)) << dtype_name(dtype);
  }
  Generator gen(test::test_seed());
  const Tensor cpu = Tensor::randn({4097}, gen, 0.0, 3.0, DType::F64);
  for (DType from : {DType::F64, DType::F32, DType::BF16}) {
    for (DType to : {DType::F64, DType::F32, DType::BF16}) {
      const Tensor host = cpu.to(from);
      EXPECT_EQ(host.to(Device::cuda(0)).to(to).to_double_vector(), host.to(to).to_double_vector())
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

}  // namespace
}  // namespace nd::nn
