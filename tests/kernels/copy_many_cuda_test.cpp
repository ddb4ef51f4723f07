// cuda::copy_many against the host's copies: 300 copies (three launches of at most 128) of sizes
// from 0 to 3,000 bytes, 16-byte aligned and not (odd offsets and sizes take the byte path), each
// destination's bytes equal to its source's and the bytes around every destination untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/copy_many.h"
#include "kernels/cuda_test_util.h"
#include "tensor/cuda_stream.h"
#include "tensor/random.h"
#include "tensor/storage.h"

namespace nd::test {
namespace {

TEST(CopyManyCuda, EqualsTheHostCopies) {
  ND_SKIP_WITHOUT_GPU();
  constexpr int kCopies = 300;
  constexpr int64_t kSlot = 4096;  // each copy's source and destination region, bytes
  Generator gen(test_seed());
  std::vector<uint8_t> src_host(kCopies * kSlot), dst_host(kCopies * kSlot, 0xA5);
  for (uint8_t& b : src_host) b = static_cast<uint8_t>(gen.next_u64());
  const Device gpu = Device::cuda(0);
  auto* src = static_cast<uint8_t*>(device_alloc(src_host.size(), 0));
  auto* dst = static_cast<uint8_t*>(device_alloc(dst_host.size(), 0));
  copy_bytes(src, gpu, src_host.data(), Device::cpu(), src_host.size());
  copy_bytes(dst, gpu, dst_host.data(), Device::cpu(), dst_host.size());
  std::vector<cuda::ByteCopy> copies;
  std::vector<int64_t> offsets, sizes;
  for (int i = 0; i < kCopies; ++i) {
    // Every fourth copy is aligned with a size of whole 16-byte words; the others start at odd
    // offsets or have odd sizes; some are empty.
    const int64_t offset = i % 4 == 0 ? 0 : static_cast<int64_t>(gen.next_u64() % 64);
    const int64_t bytes = i % 17 == 3 ? 0 : (i % 4 == 0 ? 16 * static_cast<int64_t>(gen.next_u64() % 187)
                                                        : static_cast<int64_t>(gen.next_u64() % 3000));
    offsets.push_back(offset);
    sizes.push_back(bytes);
    copies.push_back({src + i * kSlot + offset, dst + i * kSlot + offset, bytes});
  }
  cuda::copy_many(copies);
  synchronize_device_streams(0);
  std::vector<uint8_t> got(dst_host.size());
  copy_bytes(got.data(), Device::cpu(), dst, gpu, got.size());
  device_free(src, 0);
  device_free(dst, 0);
  int64_t wrong = 0;
  for (int i = 0; i < kCopies; ++i)
    for (int64_t b = 0; b < kSlot; ++b) {
      const int64_t at = i * kSlot + b;
      const bool copied = b >= offsets[i] && b < offsets[i] + sizes[i];
      const uint8_t want = copied ? src_host[at] : dst_host[at];
      if (got[at] != want && wrong++ < 5)
        ADD_FAILURE() << "copy " << i << " byte " << b << " is " << int(got[at]) << ", expected " << int(want);
    }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace nd::test
