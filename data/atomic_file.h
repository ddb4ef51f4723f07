// Writes a file so that a crash never leaves a half-written file under the real name: the bytes
// go to "<dir>/.<name>.tmp.<pid>" (hidden, matching no pattern of the real names), which is
// flushed, fsynced and then renamed over <path>; the directory is fsynced after the rename.
#pragma once
#include <cstddef>
#include <string>

namespace nd {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);  // opens the temporary file; nd::Error if it cannot
  ~AtomicFileWriter();                          // removes the temporary file unless committed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* bytes, size_t nbytes);
  void write(const std::string& text) { write(text.data(), text.size()); }
  // fsync, close, rename to the real name, fsync the directory. Nothing is visible before this.
  void commit();

 private:
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Whole-file helpers used by the tokenizer files and tests.
void write_file_atomically(const std::string& path, const std::string& contents);
std::string read_whole_file(const std::string& path);  // nd::Error naming the file if unreadable

}  // namespace nd
