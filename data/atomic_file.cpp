// POSIX implementation of the write-temporary-then-rename protocol.
#include "data/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/error.h"

namespace nd {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_directory(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// DIR/name -> DIR/.name.tmp.<pid>: hidden, and never matching a pattern for `name`'s kind.
std::string temporary_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  return path.substr(0, name_start) + "." + path.substr(name_start) + ".tmp." + std::to_string(::getpid());
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), temp_path_(temporary_name(path_)) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ND_CHECK_INPUT(fd_ >= 0, "cannot create " << temp_path_ << " to write " << path_ << ": " << errno_text());
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write(const void* bytes, size_t nbytes) {
  ND_CHECK(fd_ >= 0 && !committed_, "write to " << path_ << " after it was committed");
  const char* p = static_cast<const char*>(bytes);
  while (nbytes > 0) {
    ssize_t n = ::write(fd_, p, nbytes);
    if (n < 0 && errno == EINTR) continue;
    ND_CHECK_INPUT(n > 0, "cannot write " << temp_path_ << ": " << errno_text());
    p += n;
    nbytes -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  ND_CHECK(fd_ >= 0 && !committed_, path_ << " was already committed");
  ND_CHECK_INPUT(::fsync(fd_) == 0, "cannot fsync " << temp_path_ << ": " << errno_text());
  int fd = fd_;
  fd_ = -1;
  ND_CHECK_INPUT(::close(fd) == 0, "cannot close " << temp_path_ << ": " << errno_text());
  ND_CHECK_INPUT(std::rename(temp_path_.c_str(), path_.c_str()) == 0,
                 "cannot rename " << temp_path_ << " to " << path_ << ": " << errno_text());
  committed_ = true;
  // The rename itself is durable only once the directory entry is on disk.
  int dir = ::open(parent_directory(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  AtomicFileWriter writer(path);
  writer.write(contents);
  writer.commit();
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  ND_CHECK_INPUT(!std::filesystem::is_directory(path, ec), "cannot read " << path << ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  ND_CHECK_INPUT(in.good(), "cannot open " << path << ": " << errno_text());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  ND_CHECK_INPUT(!in.bad(), "cannot read " << path);
  return buffer.str();
}

}  // namespace nd
