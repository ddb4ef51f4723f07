// The copy-engine collectives' kernels (kernels/cuda/beside_gemms.h) against the host:
// copy_bytes_beside_gemms over sizes that leave a byte tail, with aligned and unaligned pointers,
// each destination equal to its source and the bytes around it untouched; sum_blocks in f32 and
// bf16 over 1 to 8 blocks against the f32 sum in the same order, rounded once.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cuda/beside_gemms.h"
#include "kernels/cuda_test_util.h"
#include "tensor/cuda_stream.h"
#include "tensor/random.h"
#include "tensor/storage.h"

namespace nd::test {
namespace {

TEST(BesideGemmsCuda, CopyEqualsTheHostCopy) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(fresh_seed());
  const Device gpu = Device::cuda(0);
  // Sizes around the 16-byte words and the grid's stride (2 blocks of 32 threads per SM, 4 words
  // in flight each): empty, tails only, and several MB.
  for (int64_t bytes : {int64_t{0}, int64_t{7}, int64_t{16}, int64_t{1000}, int64_t{65537}, int64_t{(5 << 20) + 9}}) {
    for (int64_t offset : {int64_t{0}, int64_t{3}}) {
      const int64_t region = bytes + 64;
      std::vector<uint8_t> src_host(region), dst_host(region, 0xA5);
      for (uint8_t& b : src_host) b = static_cast<uint8_t>(gen.next_u64());
      auto* src = static_cast<uint8_t*>(device_alloc(region, 0));
      auto* dst = static_cast<uint8_t*>(device_alloc(region, 0));
      copy_bytes(src, gpu, src_host.data(), Device::cpu(), region);
      copy_bytes(dst, gpu, dst_host.data(), Device::cpu(), region);
      cuda::copy_bytes_beside_gemms(dst + offset, src + offset, bytes, nullptr);
      synchronize_device_streams(0);
      std::vector<uint8_t> got(region);
      copy_bytes(got.data(), Device::cpu(), dst, gpu, region);
      device_free(src, 0);
      device_free(dst, 0);
      int64_t wrong = 0;
      for (int64_t b = 0; b < region; ++b) {
        const bool copied = b >= offset && b < offset + bytes;
        if (got[b] != (copied ? src_host[b] : dst_host[b]) && wrong++ < 5)
          ADD_FAILURE() << bytes << " bytes at offset " << offset << ": byte " << b << " wrong";
      }
      EXPECT_EQ(wrong, 0) << bytes << " bytes at offset " << offset;
    }
  }
}

template <typename T>
void check_sum(DType dtype, int count, int64_t n, Generator& gen) {
  const Device gpu = Device::cuda(0);
  const float scale = 0.5f;
  std::vector<Tensor> host, dev;
  std::vector<const T*> pointers;
  for (int b = 0; b < count; ++b) {
    host.push_back(random_input({n}, gen, dtype).to(dtype));
    dev.push_back(host.back().to(gpu));
    pointers.push_back(dev.back().template data<T>());
  }
  Tensor out = Tensor::zeros({n}, dtype, gpu);
  cuda::sum_blocks(pointers.data(), count, out.template data<T>(), n, scale, nullptr);
  synchronize_device_streams(0);
  Tensor got = out.to(Device::cpu()).to(DType::F32);
  std::vector<Tensor> f32;
  for (const Tensor& h : host) f32.push_back(h.to(DType::F32));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    float sum = f32[0].data<float>()[i];
    for (int b = 1; b < count; ++b) sum += f32[b].data<float>()[i];
    const float want = dtype == DType::BF16 ? bf16_to_f32(f32_to_bf16(sum * scale)) : sum * scale;
    if (got.data<float>()[i] != want && wrong++ < 5)
      ADD_FAILURE() << count << " blocks of " << n << ": element " << i << " is " << got.data<float>()[i]
                    << ", expected " << want;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(BesideGemmsCuda, SumEqualsTheHostSumInRankOrder) {
  ND_SKIP_WITHOUT_GPU();
  Generator gen(fresh_seed());
  for (int count : {1, 2, 3, 8})
    for (int64_t n : {int64_t{5}, int64_t{4099}, int64_t{300001}}) {
      check_sum<float>(DType::F32, count, n, gen);
      check_sum<bf16>(DType::BF16, count, n, gen);
    }
}

}  // namespace
}  // namespace nd::test
