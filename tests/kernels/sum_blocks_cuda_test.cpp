// cuda::sum_blocks (the copy engines' reduce-scatter sum, kernels/cuda/sum_blocks.h) against the
// host in the kernel's order: the blocks summed in f32 in block order, scaled, and (accumulate)
// added to what the output held, each step rounded on its own. Bit for bit, f32 and bf16 blocks into
// f32 (and bf16 into bf16 without accumulate), 1 to 8 blocks, sizes with odd tails and pointers
// that are not 16-byte aligned (the element-by-element path).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cuda/sum_blocks.h"
#include "kernels/cuda_test_util.h"
#include "tensor/cuda_stream.h"
#include "tensor/random.h"

namespace nd::test {
namespace {

float widen(float x) { return x; }
float widen(bf16 x) { return bf16_to_f32(x); }

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The kernel's order on the host. `volatile` keeps the compiler from fusing the multiply and the add
// into one FMA (a single rounding), which the kernel forbids itself too.
template <typename TIn>
float reference(const std::vector<std::vector<TIn>>& blocks, int64_t i, float scale, bool accumulate, float out) {
  float sum = widen(blocks[0][static_cast<size_t>(i)]);
  for (size_t b = 1; b < blocks.size(); ++b) sum += widen(blocks[b][static_cast<size_t>(i)]);
  volatile float scaled = sum * scale;
  if (!accumulate) return scaled;
  volatile float total = out + scaled;
  return total;
}

// `count` blocks of `n` random values (rounded to TIn) at element offset `offset` of their
// allocations, summed into f32 `out` (random too) with `scale`; the elements that differ in any bit
// from the host's, printing the first.
template <typename TIn>
int64_t wrong_elements(int count, int64_t n, int64_t offset, float scale, bool accumulate, Generator& gen) {
  const DType in_dtype = std::is_same<TIn, float>::value ? DType::F32 : DType::BF16;
  std::vector<std::vector<TIn>> host(static_cast<size_t>(count));
  std::vector<Tensor> dev;
  const TIn* pointers[cuda::kSumBlocksMax] = {};
  for (int b = 0; b < count; ++b) {
    Tensor t = Tensor::randn({n + offset}, gen, 0.0, 1.0, DType::F32).to(in_dtype);
    const TIn* values = t.data<TIn>();
    host[static_cast<size_t>(b)].assign(values + offset, values + offset + n);
    dev.push_back(t.to(Device::cuda(0)));
    pointers[b] = dev.back().data<TIn>() + offset;
  }
  Tensor out_host = Tensor::randn({n + offset}, gen, 0.0, 1.0, DType::F32);
  Tensor out = out_host.to(Device::cuda(0));
  cuda::sum_blocks<TIn, float>(pointers, count, out.data<float>() + offset, n, scale, accumulate, compute_stream(0));
  synchronize_device_streams(0);
  Tensor got = out.to(Device::cpu());
  int64_t wrong = 0;
  for (int64_t i = 0; i < n + offset; ++i) {
    const float before = out_host.data<float>()[i];
    const float want = i < offset ? before : reference(host, i - offset, scale, accumulate, before);
    const float have = got.data<float>()[i];
    if (bits_of(have) != bits_of(want) && wrong++ < 5)
      ADD_FAILURE() << count << " blocks of " << n << " at offset " << offset << (accumulate ? ", accumulate" : "")
                    << ": element " << i << " is " << have << ", expected " << want;
  }
  return wrong;
}

const int64_t kSizes[] = {1, 7, 8, 9, 1000, 4099, 65536 + 3};
const int kCounts[] = {1, 2, 3, 8};

template <typename TIn>
void expect_host_bits(bool accumulate) {
  Generator gen(test_seed());
  int64_t wrong = 0;
  for (int64_t n : kSizes)
    for (int count : kCounts)
      for (int64_t offset : {0, 1})  // 1: no 16-byte packs, the element-by-element path
        for (float scale : {1.0f, 1.0f / 3.0f})
          wrong += wrong_elements<TIn>(count, n, offset, scale, accumulate, gen);
  EXPECT_EQ(wrong, 0);
}

TEST(SumBlocksCuda, F32AccumulateEqualsTheHostBitForBit) {
  ND_SKIP_WITHOUT_GPU();
  expect_host_bits<float>(true);
}

TEST(SumBlocksCuda, Bf16IntoF32AccumulateEqualsTheHostBitForBit) {
  ND_SKIP_WITHOUT_GPU();
  expect_host_bits<bf16>(true);
}

TEST(SumBlocksCuda, OverwriteEqualsTheHostBitForBit) {
  ND_SKIP_WITHOUT_GPU();
  expect_host_bits<float>(false);
  expect_host_bits<bf16>(false);
}

// A bf16 output would round twice (the sum, then the addition): refused.
TEST(SumBlocksCuda, AccumulateIntoBf16IsRefused) {
  ND_SKIP_WITHOUT_GPU();
  Tensor block = Tensor::zeros({8}, DType::BF16, Device::cuda(0));
  Tensor out = Tensor::zeros({8}, DType::BF16, Device::cuda(0));
  const bf16* blocks[] = {block.data<bf16>()};
  auto into_bf16 = [&] {
    cuda::sum_blocks(blocks, 1, out.data<bf16>(), 8, 1.0f, /*accumulate=*/true, compute_stream(0));
  };
  EXPECT_THROW(into_bf16(), std::exception);
}

}  // namespace
}  // namespace nd::test
