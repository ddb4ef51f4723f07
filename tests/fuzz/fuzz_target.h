// What every fuzz target shares: a scratch directory of its own, the fuzzer's bytes written into
// files there (the readers take paths, as the product calls them), and the rule a target checks:
// a reader returns or throws nd::Error of the input kind (one clear line for the user). Anything
// else is a finding: a crash or undefined behaviour (ASan, UBSan), a leak (LeakSanitizer), another
// exception escaping (libFuzzer reports it as a crash), or an internal check a file could reach.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tensor/error.h"

namespace nd::fuzz {

// A directory of this process's own, removed at exit: under $TMPDIR, else in memory (/dev/shm)
// where there is such a file system, since every input is written to a file (on a busy disk,
// creating the files took most of each run), else /tmp.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern;
    for (const std::string root : {std::string(tmp && *tmp ? tmp : "/dev/shm"), std::string("/tmp")}) {
      pattern = root + "/nanodist_fuzz_XXXXXX";
      if (::mkdtemp(pattern.data()) != nullptr) break;
      pattern.clear();
    }
    if (pattern.empty()) {
      std::perror("mkdtemp");
      std::abort();
    }
    static const std::string removed_at_exit = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed_at_exit, ec);
    });
    return pattern;
  }();
  return dir;
}

// scratch_dir()/relative (parent directories made), holding `bytes`; returns its path.
inline std::string write_file(const std::string& relative, const std::string& bytes) {
  const std::filesystem::path path = std::filesystem::path(scratch_dir()) / relative;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
  return path.string();
}

// Targets that read several files take one input holding them all, separated by this line; the
// last part runs to the end (and may hold the separator itself).
constexpr const char* kNextFile = "\n==> next file <==\n";

// The first `parts` files of an input; missing ones are empty.
inline std::vector<std::string> split_files(const uint8_t* data, size_t size, size_t parts) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string separator(kNextFile);
  std::vector<std::string> out;
  size_t at = 0;
  while (out.size() + 1 < parts) {
    const size_t next = input.find(separator, at);
    if (next == std::string::npos) break;
    out.push_back(input.substr(at, next - at));
    at = next + separator.size();
  }
  out.push_back(at <= input.size() ? input.substr(at) : std::string());
  out.resize(parts);
  return out;
}

// Runs `read`; an nd::Error of the input kind is the expected answer to a bad file, an internal
// one means a file reached a check meant for bugs: reported and aborted, as a finding. With
// NANODIST_FUZZ_SHOW_ERRORS set, input errors are printed too (to see how far a seed gets).
template <typename Read>
void expect_input_errors_only(Read&& read) {
  try {
    read();
  } catch (const Error& e) {
    static const bool show = std::getenv("NANODIST_FUZZ_SHOW_ERRORS") != nullptr;
    if (e.is_input() && show) std::fprintf(stderr, "input error: %s\n", e.message().c_str());
    if (e.is_input()) return;
    std::fprintf(stderr, "fuzz finding: an internal error on input: %s\n", e.what());
    std::abort();
  }
}

}  // namespace nd::fuzz
