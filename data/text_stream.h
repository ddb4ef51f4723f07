// The text `prepare` reads, as one stream of bytes: input files (named, matched by a glob, or
// found in a directory) concatenated in order, or a text already in memory. Read at any offset,
// so a job can sample it, encode it in pieces on several threads and resume where it stopped,
// holding only the pieces in flight.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nd {

// Each input as a list of files: a regular file as it is; a pattern with * ? or [ its matches in
// name order; a directory every regular file below it, in path order, leaving out names that
// start with '.' and anything under `exclude` (the output directory, when it lies inside).
// nd::Error naming the input that is missing, matches nothing or holds no file.
std::vector<std::string> expand_text_inputs(const std::vector<std::string>& inputs, const std::string& exclude = "");

class TextStream {
 public:
  // The files' sizes and modification times are taken now; a file that changes while it is
  // read is an error. nd::Error naming a file that cannot be read.
  static TextStream of_files(const std::vector<std::string>& paths);
  static TextStream of_text(std::string text, std::string name);

  int64_t size() const { return size_; }
  // "a.txt, b.txt", "a.txt, b.txt and 7 more files", or the text's name.
  const std::string& name() const { return name_; }
  // Bytes [offset, offset + n) clipped to the end, replacing `out`'s contents.
  void read(int64_t offset, int64_t n, std::string& out) const;
  // One line per file ("file PATH BYTES MTIME_NS") or for the text ("text NAME BYTES HASH"):
  // equal descriptions mean the same bytes, as far as a resumed job can tell.
  std::string description() const;

 private:
  struct File {
    std::string path;
    int64_t start = 0;  // offset of its first byte in the stream
    int64_t size = 0;
    int64_t mtime_ns = 0;
  };
  std::vector<File> files_;
  std::string text_;  // when made of_text
  bool in_memory_ = false;
  int64_t size_ = 0;
  std::string name_;
};

// The bytes' FNV-1a 64-bit hash as 16 hex digits (file fingerprints, not security).
std::string fnv1a_hex(const std::string& bytes);

}  // namespace nd
