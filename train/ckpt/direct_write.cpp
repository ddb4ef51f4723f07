// O_DIRECT writes with a fallback: EINVAL from open or the first write means the file system
// does not do direct I/O, and the writer turns itself off.
#include "train/ckpt/direct_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tensor/error.h"

namespace nd::train {

DirectWriter::DirectWriter(const std::string& path) : path_(path) {
#ifdef O_DIRECT
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
#endif
}

DirectWriter::~DirectWriter() {
  if (fd_ >= 0) ::close(fd_);
}

size_t DirectWriter::write_pages(const char* data, size_t n, int64_t offset) {
  const size_t whole = n / kAlign * kAlign;
  if (fd_ < 0 || whole == 0 || reinterpret_cast<uintptr_t>(data) % kAlign != 0 || offset % kAlign != 0) return 0;
  size_t done = 0;
  while (done < whole) {
    ssize_t w = ::pwrite(fd_, data + done, whole - done, offset + static_cast<int64_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL && done == 0) {  // no direct I/O here after all
      ::close(fd_);
      fd_ = -1;
      return 0;
    }
    ND_CHECK_INPUT(w > 0, "cannot write " << path_ << ": " << std::strerror(errno));
    done += static_cast<size_t>(w);
    // A short direct write may end off a page boundary; the caller finishes the remainder.
    if (done % kAlign != 0) break;
  }
  return done;
}

}  // namespace nd::train
