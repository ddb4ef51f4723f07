// The device caching allocator: a repeated pattern of allocations reaches a steady state with no
// cudaMalloc/cudaFree, current and peak bytes follow the live tensors (at bucket sizes, and as
// requested), and freed blocks are reused.
#include <gtest/gtest.h>

#include "tensor/memory_stats.h"
#include "tensor/tensor.h"

namespace nd {
namespace {

TEST(CachingAllocatorCuda, SteadyStateAllocatesNothing) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  auto one_step = [] {
    Tensor a = Tensor::empty({1000, 333}, DType::F32, Device::cuda(0));
    Tensor b = Tensor::empty({77}, DType::BF16, Device::cuda(0));
    Tensor c = Tensor::zeros({5, 1 << 20}, DType::F32, Device::cuda(0));
  };
  one_step();
  DeviceMemoryStats before = device_memory_stats(0);
  for (int i = 0; i < 10; ++i) one_step();
  DeviceMemoryStats after = device_memory_stats(0);
  EXPECT_EQ(after.cuda_mallocs, before.cuda_mallocs);
  EXPECT_EQ(after.cuda_frees, before.cuda_frees);
  EXPECT_EQ(after.current_bytes, before.current_bytes);
}

TEST(CachingAllocatorCuda, TracksCurrentAndPeakBytes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  reset_peak_device_memory(0);
  size_t base = device_memory_stats(0).current_bytes;
  {
    Tensor a = Tensor::empty({1 << 20}, DType::F32, Device::cuda(0));  // 4 MiB, an exact bucket
    EXPECT_EQ(device_memory_stats(0).current_bytes, base + (size_t{4} << 20));
  }
  DeviceMemoryStats s = device_memory_stats(0);
  EXPECT_EQ(s.current_bytes, base);
  EXPECT_GE(s.peak_bytes, base + (size_t{4} << 20));
  EXPECT_GE(s.reserved_bytes, size_t{4} << 20);
  release_cached_device_memory(0);
  EXPECT_EQ(device_memory_stats(0).reserved_bytes, device_memory_stats(0).current_bytes);
}

TEST(CachingAllocatorCuda, CountsRequestedBytesBesideBucketBytes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  reset_peak_device_memory(0);
  const DeviceMemoryStats base = device_memory_stats(0);
  const size_t asked = (size_t{9} << 20) + 4;  // 9 MiB + 4 B: held in the 10 MiB bucket (8 MiB x 1.25)
  {
    Tensor a = Tensor::empty({static_cast<int64_t>(asked / 2)}, DType::U16, Device::cuda(0));
    const DeviceMemoryStats s = device_memory_stats(0);
    EXPECT_EQ(s.current_requested_bytes, base.current_requested_bytes + asked);
    EXPECT_EQ(s.current_bytes, base.current_bytes + (size_t{10} << 20));
  }
  const DeviceMemoryStats s = device_memory_stats(0);
  EXPECT_EQ(s.current_requested_bytes, base.current_requested_bytes);
  EXPECT_EQ(s.peak_requested_bytes, base.current_requested_bytes + asked);
  EXPECT_EQ(s.peak_bytes, base.current_bytes + (size_t{10} << 20));
}

TEST(CachingAllocatorCuda, ReusedBlocksKeepDataCorrect) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  for (int i = 0; i < 5; ++i) {
    Tensor t = Tensor::full({999}, 1.5 + i, DType::F32).to(Device::cuda(0));
    std::vector<double> v = t.to_double_vector();
    for (double x : v) ASSERT_EQ(x, 1.5 + i);
    Tensor z = Tensor::zeros({999}, DType::F32, Device::cuda(0));
    for (double x : z.to_double_vector()) ASSERT_EQ(x, 0.0);
  }
}

}  // namespace
}  // namespace nd
