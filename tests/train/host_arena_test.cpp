// HostArena (unpinned; host_arena_cuda_test.cpp pins): every piece starts on a page, holds zeros,
// is writable without touching another piece, and stays where it was as more are taken; small
// requests share chunks that grow with the arena (a snapshot of a small model stays small), a big
// one gets a chunk of its size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "train/ckpt/direct_write.h"
#include "train/ckpt/host_arena.h"

namespace nd::train {
namespace {

constexpr size_t kPage = DirectWriter::kAlign;

TEST(HostArena, PiecesArePageAlignedZeroAndApart) {
  HostArena arena(/*pinned=*/false);
  EXPECT_FALSE(arena.pinned());
  const std::vector<size_t> sizes = {1, kPage, kPage + 1, 3 * kPage - 7, 100000, 5, size_t{40} << 20, 12};
  std::vector<char*> pieces;
  for (size_t bytes : sizes) {
    char* p = static_cast<char*>(arena.take(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kPage, 0u) << bytes << " bytes";
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += p[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes << " bytes";
    pieces.push_back(p);
  }
  // Each piece filled with its own value: no fill reaches into another piece.
  for (size_t k = 0; k < pieces.size(); ++k) std::memset(pieces[k], static_cast<int>(k + 1), sizes[k]);
  for (size_t k = 0; k < pieces.size(); ++k) {
    EXPECT_EQ(pieces[k][0], static_cast<char>(k + 1)) << "piece " << k;
    EXPECT_EQ(pieces[k][sizes[k] - 1], static_cast<char>(k + 1)) << "piece " << k;
  }
}

TEST(HostArena, SmallPiecesShareChunksThatGrowWithTheArena) {
  HostArena arena(/*pinned=*/false);
  // 64 pieces of one page: chunks of 1, 1, 2, 4, 8, 16 and 32 pages (each as large as all before).
  for (int i = 0; i < 64; ++i) arena.take(kPage);
  EXPECT_EQ(arena.chunks(), 7u);
  // A piece larger than any chunk so far gets a chunk of its own size.
  arena.take(size_t{64} << 20);
  EXPECT_EQ(arena.chunks(), 8u);
}

}  // namespace
}  // namespace nd::train
