// DirectWriter: the whole pages of an aligned buffer at an aligned offset go to the file (where
// the file system does direct I/O; elsewhere nothing is written and the test says so), never
// an unaligned buffer or offset, and the file then holds exactly the bytes given.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <memory>

#include "train/ckpt/direct_write.h"
#include "train/train_fixture.h"

namespace nd::train {
namespace {

constexpr size_t kPage = DirectWriter::kAlign;

TEST(DirectWrite, WritesWholeAlignedPagesAndNothingElse) {
  testing::TempDir dir;
  const std::string path = dir / "part.bin";
  std::ofstream(path, std::ios::binary) << std::string(5 * kPage, '\0');
  void* raw = nullptr;
  ASSERT_EQ(::posix_memalign(&raw, kPage, 4 * kPage), 0);
  std::unique_ptr<char, decltype(&::free)> buffer(static_cast<char*>(raw), ::free);
  for (size_t i = 0; i < 4 * kPage; ++i) buffer.get()[i] = static_cast<char>(i * 7 + 3);

  DirectWriter writer(path);
  if (!writer.active()) GTEST_SKIP() << "no direct I/O on " << path << "'s file system";
  EXPECT_EQ(writer.write_pages(buffer.get() + 1, 2 * kPage, 0), 0u) << "unaligned buffer";
  EXPECT_EQ(writer.write_pages(buffer.get(), 2 * kPage, 100), 0u) << "unaligned offset";
  EXPECT_EQ(writer.write_pages(buffer.get(), kPage - 1, 0), 0u) << "less than a page";
  // 3 pages and 100 bytes at page 1: the 3 whole pages are written, the 100 left to the caller.
  const size_t written = writer.write_pages(buffer.get(), 3 * kPage + 100, kPage);
  if (!writer.active()) GTEST_SKIP() << "the file system refused direct writes";
  ASSERT_EQ(written, 3 * kPage);

  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(file.size(), 5 * kPage);
  EXPECT_EQ(file.substr(0, kPage), std::string(kPage, '\0'));
  EXPECT_EQ(file.substr(kPage, 3 * kPage), std::string(buffer.get(), 3 * kPage));
  EXPECT_EQ(file.substr(4 * kPage), std::string(kPage, '\0'));
}

}  // namespace
}  // namespace nd::train
