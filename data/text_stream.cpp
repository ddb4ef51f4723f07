// Expanding prepare's inputs into files, and reading them as one stream with pread.
#include "data/text_stream.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tensor/error.h"

namespace nd {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> glob_sorted(const std::string& pattern) {
  glob_t g{};
  const int status = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (status == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  ND_CHECK_INPUT(status == 0 || status == GLOB_NOMATCH, "cannot expand --input " << pattern);
  ND_CHECK_INPUT(!out.empty(), "--input " << pattern << " matches no file");
  std::sort(out.begin(), out.end());
  return out;
}

// True when `path` is `dir` or lies below it (both made absolute and normal).
bool lies_under(const fs::path& path, const fs::path& dir) {
  auto p = path.begin(), d = dir.begin();
  for (; d != dir.end() && !d->empty(); ++p, ++d)
    if (p == path.end() || *p != *d) return false;
  return true;
}

fs::path normal(const std::string& path) { return fs::absolute(path).lexically_normal(); }

std::vector<std::string> files_below(const std::string& dir, const std::string& exclude) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  ND_CHECK_INPUT(!ec, "cannot read directory " << dir << ": " << ec.message());
  for (; it != end; it.increment(ec)) {
    ND_CHECK_INPUT(!ec, "cannot read directory " << dir << ": " << ec.message());
    const std::string name = it->path().filename().string();
    const bool hidden = !name.empty() && name[0] == '.';
    if (hidden || (!exclude.empty() && lies_under(normal(it->path().string()), normal(exclude)))) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  ND_CHECK_INPUT(!out.empty(), "--input " << dir << " is a directory that holds no text file");
  std::sort(out.begin(), out.end());
  return out;
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::vector<std::string> expand_text_inputs(const std::vector<std::string>& inputs, const std::string& exclude) {
  ND_CHECK_INPUT(!inputs.empty(), "no input files given");
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::vector<std::string> more;
    std::error_code ec;
    if (input.find_first_of("*?[") != std::string::npos)
      more = glob_sorted(input);
    else if (fs::is_directory(input, ec))
      more = files_below(input, exclude);
    else
      more = {input};
    files.insert(files.end(), more.begin(), more.end());
  }
  return files;
}

TextStream TextStream::of_files(const std::vector<std::string>& paths) {
  TextStream s;
  for (const std::string& path : paths) {
    struct stat st {};
    ND_CHECK_INPUT(::stat(path.c_str(), &st) == 0, "cannot read " << path << ": " << std::strerror(errno));
    ND_CHECK_INPUT(S_ISREG(st.st_mode), "cannot read " << path << ": not a regular file");
    s.files_.push_back({path, s.size_, static_cast<int64_t>(st.st_size), mtime_ns(st)});
    s.size_ += st.st_size;
  }
  // The files by name, or the first two and a count where a list would flood the summary line.
  for (size_t i = 0; i < paths.size() && (paths.size() <= 4 || i < 2); ++i) s.name_ += (i ? ", " : "") + paths[i];
  if (paths.size() > 4) s.name_ += " and " + std::to_string(paths.size() - 2) + " more files";
  return s;
}

TextStream TextStream::of_text(std::string text, std::string name) {
  TextStream s;
  s.size_ = static_cast<int64_t>(text.size());
  s.text_ = std::move(text);
  s.in_memory_ = true;
  s.name_ = std::move(name);
  return s;
}

void TextStream::read(int64_t offset, int64_t n, std::string& out) const {
  const int64_t begin = std::min(std::max<int64_t>(offset, 0), size_);
  const int64_t end = std::min(size_, begin + std::max<int64_t>(n, 0));
  out.resize(static_cast<size_t>(end - begin));
  if (in_memory_) {
    std::copy(text_.begin() + begin, text_.begin() + end, out.begin());
    return;
  }
  // The first file holding `begin`, then on through the files until `end`.
  auto file = std::upper_bound(files_.begin(), files_.end(), begin,
                               [](int64_t at, const File& f) { return at < f.start; });
  for (--file; begin < end && file != files_.end() && file->start < end; ++file) {
    const int64_t from = std::max(begin, file->start), to = std::min(end, file->start + file->size);
    if (from >= to) continue;
    const int fd = ::open(file->path.c_str(), O_RDONLY | O_CLOEXEC);
    ND_CHECK_INPUT(fd >= 0, "cannot open " << file->path << ": " << std::strerror(errno));
    struct stat st {};
    const bool same = ::fstat(fd, &st) == 0 && st.st_size == file->size && mtime_ns(st) == file->mtime_ns;
    int64_t done = 0;
    while (same && done < to - from) {
      const ssize_t got = ::pread(fd, &out[static_cast<size_t>(from - begin + done)],
                                  static_cast<size_t>(to - from - done), from - file->start + done);
      if (got <= 0) break;
      done += got;
    }
    ::close(fd);
    ND_CHECK_INPUT(same, file->path << " changed while prepare was reading it (size or modification time)");
    ND_CHECK_INPUT(done == to - from, "cannot read " << file->path << " at byte " << from - file->start);
  }
}

std::string TextStream::description() const {
  if (in_memory_) return "text " + name_ + " " + std::to_string(size_) + " " + fnv1a_hex(text_) + "\n";
  std::string out;
  for (const File& f : files_)
    out += "file " + normal(f.path).string() + " " + std::to_string(f.size) + " " + std::to_string(f.mtime_ns) + "\n";
  return out;
}

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace nd
