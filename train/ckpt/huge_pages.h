// Backing big host buffers with 2 MiB pages (transparent huge pages) where the kernel allows it.
// A checkpoint part written by direct I/O pins every page of its source once per write; with
// 4 KiB pages that page walk was most of the writer's system time (0.3 s per 4.25 GB part on a
// 2-core VM) and kept the disk below its speed. Best effort: a kernel without it changes nothing.
#pragma once
#include <cstddef>

namespace nd::train {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// Memory not yet touched: asks for huge pages from its first touch on (MADV_HUGEPAGE).
void prefer_huge_pages(void* data, size_t bytes);
// Memory in use: also moves its whole 2 MiB pages onto huge pages now (MADV_COLLAPSE, Linux
// 6.1+; a copy of the range, once). False where unsupported, or where some of it could not move
// (physical memory too fragmented: the rest has moved).
bool collapse_to_huge_pages(void* data, size_t bytes);

// A host buffer of `bytes` aligned to `alignment` (a power of two, at least a page), on huge pages
// (and 2 MiB-aligned) when it is at least one, every page touched now by up to 8 threads: the page
// faults and the kernel's zeroing are most of the cost of big buffers, and eight threads share
// them (docs/benchmarks/). Zero-filled. Free with std::free; nullptr when
// the memory is not there.
void* allocate_touched(size_t bytes, size_t alignment);

}  // namespace nd::train
