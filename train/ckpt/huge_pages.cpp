// madvise on the 2 MiB-aligned interior of a range: the pages at its ends may belong to other
// allocations, which must not be touched.
#include "train/ckpt/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace nd::train {
namespace {

// The whole huge pages inside [data, data + bytes): their start and length (0 when none).
std::pair<char*, size_t> interior(void* data, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / kHugePageBytes * kHugePageBytes;
  if (end <= begin) return {nullptr, 0};
  return {reinterpret_cast<char*>(begin), end - begin};
}

// Past this many bytes a buffer is touched by more than one thread.
constexpr size_t kBytesPerThread = size_t{256} << 20;
constexpr unsigned kMaxTouchThreads = 8;

// Memory not yet touched: asks for huge pages from its first touch on (MADV_HUGEPAGE).
void prefer_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  auto [begin, length] = interior(data, bytes);
  if (length > 0) ::madvise(begin, length, MADV_HUGEPAGE);
#endif
}

}  // namespace

void* allocate_touched(size_t bytes, size_t alignment) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes >= kHugePageBytes) alignment = std::max(alignment, kHugePageBytes);
  void* p = nullptr;
  if (::posix_memalign(&p, alignment, bytes) != 0) return nullptr;
  prefer_huge_pages(p, bytes);
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min({static_cast<size_t>(kMaxTouchThreads), cores, bytes / kBytesPerThread + 1});
  // Whole huge pages to each thread, so that no two fault in the same one.
  const size_t share = (bytes / threads + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  auto touch = [p, bytes, share](size_t t) {
    const size_t begin = std::min(bytes, t * share), end = std::min(bytes, begin + share);
    std::memset(static_cast<char*>(p) + begin, 0, end - begin);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(touch, t);
  touch(0);
  for (std::thread& h : helpers) h.join();
  return p;
}

}  // namespace nd::train
