// Running the programs that produce the named corpora.
#include "data/corpus.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "tensor/error.h"

namespace nd {

const char* const kTinyShakespeareUrl =
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt";

namespace {

bool program_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Runs `command` through the shell and returns its stdout; `what` names it in errors.
std::string run_and_capture(const std::string& command, const std::string& what) {
  FILE* pipe = ::popen(command.c_str(), "r");
  ND_CHECK_INPUT(pipe != nullptr, "cannot start " << what << " (" << command << ")");
  std::string output;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = ::pclose(pipe);
  ND_CHECK_INPUT(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 what << " failed (" << command << ", exit status "
                      << (status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ")");
  return output;
}

}  // namespace

std::string read_named_corpus(const std::string& name) {
  if (name == "kjv") {
    ND_CHECK_INPUT(program_on_path("bible"),
                   "the `bible` program is missing: install bible-kjv (apt-get install bible-kjv) for --corpus kjv");
    std::string text = run_and_capture("bible -f \"Gen1:1-Rev22:21\" 2>/dev/null", "bible (King James Bible)");
    ND_CHECK_INPUT(!text.empty(), "`bible -f \"Gen1:1-Rev22:21\"` printed nothing: is bible-kjv installed completely?");
    return text;
  }
  if (name == "shakespeare") {
    ND_CHECK_INPUT(program_on_path("curl"), "curl is missing: install curl to download TinyShakespeare");
    std::string command =
        std::string("curl -fsSL --connect-timeout 15 --max-time 300 '") + kTinyShakespeareUrl + "' 2>/dev/null";
    try {
      std::string text = run_and_capture(command, "curl");
      ND_CHECK_INPUT(!text.empty(), "downloaded an empty file from " << kTinyShakespeareUrl);
      return text;
    } catch (const Error& e) {
      ND_FAIL_INPUT("cannot download TinyShakespeare from " << kTinyShakespeareUrl
                                                             << " (offline? pass the file with --input instead): "
                                                             << e.message());
    }
  }
  ND_FAIL_INPUT("unknown corpus \"" << name << "\" (expected kjv or shakespeare)");
}

}  // namespace nd
