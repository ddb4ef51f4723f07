// A whole file mapped read-only into memory, so multi-gigabyte token shards cost address space,
// not RAM: pages are read on first touch and shared by every rank on the host.
#pragma once
#include <cstdint>
#include <string>

namespace nd {

class MappedFile {
 public:
  // nd::Error naming the file when it is missing, not a regular file, or cannot be mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }
  const unsigned char* bytes() const { return bytes_; }  // nullptr for an empty file

 private:
  std::string path_;
  int64_t size_ = 0;
  const unsigned char* bytes_ = nullptr;
};

}  // namespace nd
