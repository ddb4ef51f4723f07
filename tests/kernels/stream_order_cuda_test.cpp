// Kernel launchers called without a stream run on the compute stream, never on the legacy default
// stream (which does not wait for the non-blocking compute stream). Each launcher is queued behind
// busy copies and the copy that produces its input, all on the compute stream: run out of order,
// it reads the input before it is written and its output stays at the wrong value. (The row-parallel
// bias and the position embedding once summed their gradients on the legacy stream this way.)
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda_test_util.h"
#if NANODIST_WITH_CUDA
#include "kernels/cuda/bias_add.h"
#include "kernels/cuda/reduce.h"
#include "tensor/cuda_check.h"
#endif

namespace nd::test {
namespace {

#if NANODIST_WITH_CUDA
constexpr int64_t kBusyFloats = int64_t{64} << 20;  // 256 MB per busy copy
constexpr int kBusyCopies = 16;

void copy_on_compute(Tensor& dst, const Tensor& src) {
  CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(), cudaMemcpyDeviceToDevice, compute_stream(0)));
}

// Queues busy copies on the compute stream, then dst = src behind them; returns without waiting.
void busy_then_copy(Tensor& dst, const Tensor& src) {
  static Tensor a = Tensor::zeros({kBusyFloats}, DType::F32, Device::cuda(0));
  static Tensor b = Tensor::zeros({kBusyFloats}, DType::F32, Device::cuda(0));
  for (int i = 0; i < kBusyCopies; ++i) copy_on_compute(i % 2 ? a : b, i % 2 ? b : a);
  copy_on_compute(dst, src);
}

TEST(StreamOrderCuda, BiasGradientWaitsForItsInput) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  const int64_t M = 4096, N = 768;
  Tensor source = random_input({M, N}, gen, DType::F32);
  std::vector<double> values = source.to_double_vector(), want(N, 0.0);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) want[c] += values[r * N + c];
  Tensor src = source.to(Device::cuda(0));
  Tensor dout = Tensor::zeros({M, N}, DType::F32, Device::cuda(0));
  Tensor db = Tensor::zeros({N}, DType::F32, Device::cuda(0));
  busy_then_copy(dout, src);
  cuda::bias_add_backward(dout.data<float>(), db.data<float>(), M, N);
  expect_close(db, Tensor::from_vector(want, {N}), 1e-5, 1e-4, "bias gradient");
}

TEST(StreamOrderCuda, ReductionsWithoutAStreamWaitForTheirInputs) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(test_seed());
  const int64_t n = 1 << 20;
  Tensor source = random_input({2, n}, gen, DType::F32);
  std::vector<double> values = source.to_double_vector(), want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = values[i] + values[n + i];
  Tensor src = source.to(Device::cuda(0));
  Tensor rows = Tensor::zeros({2, n}, DType::F32, Device::cuda(0));
  Tensor sum = Tensor::zeros({n}, DType::F32, Device::cuda(0));
  busy_then_copy(rows, src);
  cuda::reduce_rows(sum.data<float>(), rows.data<float>(), 2, n, 1.0f, -1, nullptr);
  expect_close(sum, Tensor::from_vector(want, {n}), 1e-6, 1e-6, "reduce_rows");

  Tensor acc = Tensor::zeros({n}, DType::F32, Device::cuda(0));
  Tensor first = src.narrow(0, 1).view({n});
  busy_then_copy(acc, first);
  cuda::reduce_add(acc.data<float>(), rows.select(1).data<float>(), n, 1.0f, nullptr);
  expect_close(acc, Tensor::from_vector(want, {n}), 1e-6, 1e-6, "reduce_add");
}
#endif

}  // namespace
}  // namespace nd::test
