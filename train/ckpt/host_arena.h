// HostArena: page-aligned host buffers carved out of big chunks, each chunk touched by several
// threads at once (allocate_touched) and, for a GPU's device-to-host copies, pinned by one
// cudaHostRegister. A checkpoint snapshot asks for hundreds of buffers (one for each piece of a
// tensor's parameters, m and v that the rank holds), which one by one would each be touched by a
// single thread and pinned by a call of its own.
#pragma once
#include <cstddef>
#include <vector>

namespace nd::train {

class HostArena {
 public:
  // The largest chunk: the most memory a last, partly used chunk can leave idle.
  static constexpr size_t kMaxChunkBytes = size_t{2} << 30;

  explicit HostArena(bool pinned) : pinned_(pinned) {}
  ~HostArena();
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;

  // `bytes` (at least one) of zeros, starting on a page boundary (DirectWriter::kAlign, so that
  // direct I/O can write them), valid until the arena dies; nothing is given back before. A new
  // chunk is as large as the request, or as all chunks so far up to kMaxChunkBytes, so that a small
  // model's snapshot stays small. nd::Error when the memory is not there or cannot be pinned.
  void* take(size_t bytes);
  bool pinned() const { return pinned_; }
  size_t chunks() const { return chunks_.size(); }

 private:
  struct Chunk {
    char* data = nullptr;
    size_t bytes = 0, used = 0;
  };
  void add_chunk(size_t at_least);

  std::vector<Chunk> chunks_;
  size_t total_ = 0;
  bool pinned_;
};

}  // namespace nd::train
