// Writing the page-aligned bulk of a checkpoint part without the page cache (O_DIRECT): the bytes
// go from the host buffer to the disk with no copy into kernel memory, which on a small machine is
// CPU time an asynchronous save's writer takes from training. Where the file system refuses direct
// I/O (tmpfs) nothing is written directly and the caller writes everything.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nd::train {

class DirectWriter {
 public:
  static constexpr size_t kAlign = 4096;  // buffer, file offset and length granularity

  explicit DirectWriter(const std::string& path);  // opens `path` (existing) for direct writes
  ~DirectWriter();
  DirectWriter(const DirectWriter&) = delete;
  DirectWriter& operator=(const DirectWriter&) = delete;

  // Writes the whole kAlign pages at the start of [data, data + n) at `offset` when `data` and
  // `offset` are kAlign-aligned; returns the bytes written (a multiple of kAlign; 0 when it wrote
  // nothing, and from then on when the file system refused). The caller writes the rest.
  // nd::Error naming `path` on a write error (a full disk, the file-size limit).
  size_t write_pages(const char* data, size_t n, int64_t offset);

  bool active() const { return fd_ >= 0; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace nd::train
