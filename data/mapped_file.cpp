// MappedFile: open, fstat, mmap(PROT_READ, MAP_SHARED), close the descriptor (the mapping stays).
#include "data/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/error.h"

namespace nd {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  std::error_code ec;
  ND_CHECK_INPUT(std::filesystem::is_regular_file(path, ec), "cannot open token file " << path << " (missing or not a file)");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ND_CHECK_INPUT(fd >= 0, "cannot open token file " << path << ": " << std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    ND_FAIL_INPUT("cannot stat " << path << ": " << std::strerror(err));
  }
  size_ = static_cast<int64_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd, 0);
    int err = errno;
    ::close(fd);
    ND_CHECK_INPUT(p != MAP_FAILED, "cannot map " << path << " into memory: " << std::strerror(err));
    bytes_ = static_cast<const unsigned char*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (bytes_ != nullptr) ::munmap(const_cast<unsigned char*>(bytes_), static_cast<size_t>(size_));
}

}  // namespace nd
