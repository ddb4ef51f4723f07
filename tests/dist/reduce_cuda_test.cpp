// The CUDA reduce kernels against the CPU ones (the reference) on random inputs from fixed seeds, including
// unaligned pointers and lengths that are not whole vectors. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/reduce.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#if NANODIST_WITH_CUDA
#include "kernels/cuda/reduce.h"
#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
template <typename T>
void run_case(DType dtype, int64_t n, int64_t offset, float scale, uint64_t seed) {
  Generator gen(seed);
  Tensor dst_host = Tensor::randn({n + offset}, gen, 0.0, 1.0, dtype);
  Tensor src_host = Tensor::randn({n + offset}, gen, 0.0, 1.0, dtype);
  Tensor dst = dst_host.to(Device::cuda(0)), src = src_host.to(Device::cuda(0));
  cuda::reduce_add(dst.data<T>() + offset, src.data<T>() + offset, n, scale, compute_stream(0));
  cpu::reduce_add(dst_host.data<T>() + offset, src_host.data<T>() + offset, n, scale);
  std::vector<double> got = dst.to_double_vector(), want = dst_host.to_double_vector();
  for (int64_t i = 0; i < n + offset; ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i])) << dtype_name(dtype) << " n " << n << " offset " << offset
                                                            << " element " << i;

  const int rows = 3;
  Tensor rows_host = Tensor::randn({rows, n}, gen, 0.0, 1.0, dtype);
  Tensor out_host = Tensor::full({n}, 7e30, dtype), out = out_host.to(Device::cuda(0));
  Tensor rows_dev = rows_host.to(Device::cuda(0));
  cuda::reduce_rows(out.data<T>(), rows_dev.data<T>(), rows, n, scale, -1, compute_stream(0));
  cpu::reduce_rows(out_host.data<T>(), rows_host.data<T>(), rows, n, scale, -1);
  got = out.to_double_vector();
  want = out_host.to_double_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i])) << "rows element " << i;

  // Row 1 read from the destination (the direct all-reduce's own data), its slot poisoned.
  Tensor own = rows_host.select(1).to(Device::cuda(0));
  rows_dev.select(1).fill_(7e30);
  cuda::reduce_rows(own.data<T>(), rows_dev.data<T>(), rows, n, scale, 1, compute_stream(0));
  got = own.to_double_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i])) << "own-row element " << i;
}
#endif

TEST(ReduceCuda, MatchesCpuReference) {
  if (!cuda_available()) GTEST_SKIP() << "no GPU";
#if NANODIST_WITH_CUDA
  uint64_t seed = 100;
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1 << 20}}) {
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      for (float scale : {1.0f, 0.25f}) {
        run_case<float>(DType::F32, n, offset, scale, ++seed);
        run_case<bf16>(DType::BF16, n, offset, scale, ++seed);
      }
    }
  }
#endif
}

}  // namespace
}  // namespace nd
