// allocate_touched: the alignment asked for (2 MiB from one huge page up), every byte zero and
// writable, at sizes one thread touches and sizes shared by several threads (whose shares must stay
// inside the buffer, the last one short), and nullptr rather than a crash when memory runs out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "train/ckpt/direct_write.h"
#include "train/ckpt/huge_pages.h"

namespace nd::train {
namespace {

void expect_zero_and_writable(char* p, size_t bytes) {
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
  EXPECT_EQ(nonzero, 0u) << "of " << bytes << " bytes";
  std::memset(p, 0x5a, bytes);
  EXPECT_EQ(p[0], 0x5a);
  EXPECT_EQ(p[bytes - 1], 0x5a);
}

TEST(HugePages, AllocateTouchedIsAlignedZeroAndWholeAtEverySize) {
  const size_t page = DirectWriter::kAlign;
  // One byte, a few pages, just below and above a huge page, and past the one-thread size with
  // a remainder that is no whole huge page (the last share is short).
  for (size_t bytes : {size_t{1}, 3 * page + 5, kHugePageBytes - 1, kHugePageBytes + 1,
                       (size_t{600} << 20) + 12345}) {
    void* raw = allocate_touched(bytes, page);
    ASSERT_NE(raw, nullptr) << bytes;
    const size_t alignment = bytes >= kHugePageBytes ? kHugePageBytes : page;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(raw) % alignment, 0u) << bytes << " bytes";
    expect_zero_and_writable(static_cast<char*>(raw), bytes);
    std::free(raw);
  }
}

TEST(HugePages, AllocateTouchedSaysWhenMemoryIsNotThere) {
  // More than any machine's address space allows: nullptr, not a crash.
  EXPECT_EQ(allocate_touched(SIZE_MAX / 2, DirectWriter::kAlign), nullptr);
}

}  // namespace
}  // namespace nd::train
