// Appending to token files with POSIX calls: pwrite of the header at close, ftruncate on reopen.
#include "data/token_file_appender.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "data/atomic_file.h"
#include "data/token_file.h"
#include "tensor/error.h"

namespace nd {
namespace {

constexpr int64_t kHeaderBytes = kTokenFileHeaderInts * 4;

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const unsigned char* bytes, size_t n, int64_t at, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t put = ::pwrite(fd, bytes + done, n - done, at + static_cast<int64_t>(done));
    ND_CHECK_INPUT(put > 0, "cannot write " << path << ": " << errno_text());
    done += static_cast<size_t>(put);
  }
}

void read_all(int fd, unsigned char* bytes, size_t n, int64_t at, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, bytes + done, n - done, at + static_cast<int64_t>(done));
    ND_CHECK_INPUT(got > 0, "cannot read " << path << ": " << (got == 0 ? "too short" : errno_text()));
    done += static_cast<size_t>(got);
  }
}

}  // namespace

TokenFileAppender::TokenFileAppender(std::string path, int64_t vocab_size, int64_t keep)
    : path_(std::move(path)), vocab_size_(vocab_size), width_(token_width_for_vocab(vocab_size)) {
  ND_CHECK(vocab_size > 0 && vocab_size <= std::numeric_limits<int32_t>::max(),
           path_ << ": vocab size " << vocab_size << " is not a positive int32");
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (keep < 0 ? O_TRUNC : 0), 0644);
  ND_CHECK_INPUT(fd_ >= 0, "cannot open " << path_ << " for writing: " << errno_text());
  if (keep < 0) {
    const std::vector<unsigned char> header = token_file_header_bytes(vocab_size, 0);
    write_all(fd_, header.data(), header.size(), 0, path_);
    return;
  }
  const int64_t bytes = kHeaderBytes + keep * width_;
  ND_CHECK_INPUT(::lseek(fd_, 0, SEEK_END) >= bytes,
                 path_ << " holds fewer than the " << keep << " tokens a resumed prepare expects there");
  ND_CHECK_INPUT(::ftruncate(fd_, bytes) == 0, "cannot truncate " << path_ << ": " << errno_text());
  count_ = keep;
}

TokenFileAppender::~TokenFileAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void TokenFileAppender::append(const int32_t* tokens, int64_t n) {
  ND_CHECK(fd_ >= 0, path_ << " is closed");
  ND_CHECK_INPUT(count_ + n <= std::numeric_limits<int32_t>::max(),
                 path_ << ": " << count_ + n << " tokens do not fit the int32 count of a token file's header");
  bytes_.resize(static_cast<size_t>(n) * width_);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = tokens[i];
    ND_CHECK(t >= 0 && t < vocab_size_, path_ << ": token " << t << " is outside the vocabulary of size " << vocab_size_);
    for (int b = 0; b < width_; ++b) bytes_[static_cast<size_t>(i * width_ + b)] = static_cast<unsigned char>(t >> (8 * b));
  }
  write_all(fd_, bytes_.data(), bytes_.size(), kHeaderBytes + count_ * width_, path_);
  count_ += n;
}

void TokenFileAppender::sync() {
  ND_CHECK(fd_ >= 0, path_ << " is closed");
  ND_CHECK_INPUT(::fdatasync(fd_) == 0, "cannot sync " << path_ << ": " << errno_text());
}

void TokenFileAppender::close() {
  ND_CHECK(fd_ >= 0, path_ << " is closed");
  const std::vector<unsigned char> header = token_file_header_bytes(vocab_size_, count_);
  write_all(fd_, header.data(), header.size(), 0, path_);
  sync();
  ::close(fd_);
  fd_ = -1;
}

void copy_token_range(const std::string& from, int64_t begin, int64_t end, const std::string& to) {
  const TokenFileHeader h = read_token_file_header(from);
  ND_CHECK(0 <= begin && begin <= end && end <= h.count, from << ": tokens [" << begin << ", " << end << ") of " << h.count);
  struct Input {
    int fd;
    ~Input() {
      if (fd >= 0) ::close(fd);
    }
  } input{::open(from.c_str(), O_RDONLY | O_CLOEXEC)};
  ND_CHECK_INPUT(input.fd >= 0, "cannot open " << from << ": " << errno_text());
  AtomicFileWriter out(to);
  const std::vector<unsigned char> header = token_file_header_bytes(h.vocab_size, end - begin);
  out.write(header.data(), header.size());
  std::vector<unsigned char> block(size_t{1} << 22);
  for (int64_t at = begin * h.width, stop = end * h.width; at < stop;) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(stop - at, static_cast<int64_t>(block.size())));
    read_all(input.fd, block.data(), n, kHeaderBytes + at, from);
    out.write(block.data(), n);
    at += static_cast<int64_t>(n);
  }
  out.commit();
}

void truncate_token_file(const std::string& path, int64_t vocab_size, int64_t count) {
  TokenFileAppender file(path, vocab_size, count);
  file.close();
}

}  // namespace nd
