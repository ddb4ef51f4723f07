// Runs `nanodist WORDS...` in-process through the command table, as main() would.
#pragma once
#include <string>
#include <vector>

#include "cli/subcommand.h"

namespace nd::cli::testing {

inline int run_words(std::vector<std::string> words) {
  words.insert(words.begin(), "nanodist");
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  return run_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace nd::cli::testing
