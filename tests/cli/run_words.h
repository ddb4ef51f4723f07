// Runs `nanodist WORDS...` in-process through the command table, as main() would, and tells
// whether such a run stops with an input error.
#pragma once
#include <string>
#include <vector>

#include "cli/subcommand.h"
#include "tensor/error.h"

namespace nd::cli::testing {

inline int run_words(std::vector<std::string> words) {
  words.insert(words.begin(), "nanodist");
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  return run_command_line(static_cast<int>(argv.size()), argv.data());
}

// True when `nanodist WORDS...` stops with an input error (a user's mistake, not a bug).
inline bool input_error(const std::vector<std::string>& words) {
  try {
    run_words(words);
  } catch (const Error& e) {
    return e.is_input();
  }
  return false;
}

}  // namespace nd::cli::testing
