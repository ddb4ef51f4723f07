// Backing big host buffers with 2 MiB pages (transparent huge pages) where the kernel allows it.
// A checkpoint part written by direct I/O pins every page of its source once per write; with
// 4 KiB pages that page walk is most of the writer's system time and keeps the disk below its
// speed. Best effort: a kernel without it changes nothing.
#pragma once
#include <cstddef>

namespace nd::train {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// A host buffer of `bytes` aligned to `alignment` (a power of two, at least a page), on huge pages
// (and 2 MiB-aligned) when it is at least one, every page touched now by up to 8 threads: the page
// faults and the kernel's zeroing are most of the cost of big buffers, and eight threads share
// them. Zero-filled. Free with std::free; nullptr when the memory is not there.
void* allocate_touched(size_t bytes, size_t alignment);

}  // namespace nd::train
