#include "train/ckpt/host_arena.h"

#include <algorithm>
#include <cstdlib>

#include "tensor/error.h"
#include "train/ckpt/direct_write.h"
#include "train/ckpt/huge_pages.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nd::train {

namespace {
constexpr size_t kPage = DirectWriter::kAlign;
size_t whole_pages(size_t bytes) { return (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage; }
}  // namespace

HostArena::~HostArena() {
  for (Chunk& c : chunks_) {
#if NANODIST_WITH_CUDA
    if (pinned_) cudaHostUnregister(c.data);
#endif
    std::free(c.data);
  }
}

void* HostArena::take(size_t bytes) {
  bytes = whole_pages(bytes);
  if (chunks_.empty() || chunks_.back().bytes - chunks_.back().used < bytes) add_chunk(bytes);
  Chunk& c = chunks_.back();
  void* p = c.data + c.used;
  c.used += bytes;
  return p;
}

void HostArena::add_chunk(size_t at_least) {
  const size_t bytes = whole_pages(std::max(at_least, std::min(total_, kMaxChunkBytes)));
  void* p = allocate_touched(bytes, kPage);
  ND_CHECK(p != nullptr, "cannot allocate " << bytes << " bytes of host memory for a checkpoint snapshot");
#if NANODIST_WITH_CUDA
  if (pinned_) {
    // Pinned after the touch rather than by cudaHostAlloc, which faults in, zeroes and pins 4 KiB
    // pages on one thread: several times slower for tens of GB than touching on eight threads and
    // registering 2 MiB pages, with device-to-host copies into it as fast (docs/benchmarks/).
    const cudaError_t err = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
    if (err != cudaSuccess) {
      std::free(p);
      ND_FAIL("cannot pin " << bytes << " bytes of host memory for a checkpoint snapshot: " << cudaGetErrorString(err));
    }
  }
#endif
  chunks_.push_back(Chunk{static_cast<char*>(p), bytes, 0});
  total_ += bytes;
}

}  // namespace nd::train
