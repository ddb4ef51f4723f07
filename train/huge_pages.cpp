// madvise on the 2 MiB-aligned interior of a range: the pages at its ends may belong to other
// allocations, which must not be touched.
#include "train/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <utility>

namespace nd::train {
namespace {

#ifndef MADV_COLLAPSE
constexpr int MADV_COLLAPSE = 25;  // Linux 6.1; older headers lack the name
#endif

// The whole huge pages inside [data, data + bytes): their start and length (0 when none).
std::pair<char*, size_t> interior(void* data, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / kHugePageBytes * kHugePageBytes;
  if (end <= begin) return {nullptr, 0};
  return {reinterpret_cast<char*>(begin), end - begin};
}

}  // namespace

void prefer_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  auto [begin, length] = interior(data, bytes);
  if (length > 0) ::madvise(begin, length, MADV_HUGEPAGE);
#endif
}

bool collapse_to_huge_pages(void* data, size_t bytes) {
  auto [begin, length] = interior(data, bytes);
  if (length == 0) return false;
  prefer_huge_pages(begin, length);  // and khugepaged keeps them so
  return ::madvise(begin, length, MADV_COLLAPSE) == 0;
}

}  // namespace nd::train
