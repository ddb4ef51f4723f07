// Formats the error line main() prints; see error_line.h for which errors show where.
#include "cli/error_line.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "cli/launcher_rank.h"
#include "tensor/error.h"

namespace nd::cli {

bool verbose_errors(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--verbose=true") == 0) return true;
    if (std::strcmp(argv[i], "--verbose") != 0) continue;
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (std::strcmp(next, "false") != 0 && std::strcmp(next, "0") != 0) return true;
  }
  const char* env = std::getenv("NANODIST_VERBOSE");
  return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
}

std::string error_line(const std::exception& error, bool verbose) {
  const std::string prefix = "nanodist: error: ";
  if (const auto* e = dynamic_cast<const Error*>(&error)) {
    if (e->is_input() && !verbose) return prefix + e->message();
    return prefix + e->message() + " (" + e->where() + ")";
  }
  // An allocation outside nanodist's own buffers (a std::vector, a string) that did not fit.
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr)
    return prefix + "out of host memory (std::bad_alloc): the run's sizes do not fit this machine; " +
           "a smaller --batch-size, --block-size or model would";
  return prefix + error.what() + " (an exception outside nanodist's checks)";
}

bool print_error_here(const std::exception& error, bool verbose) {
  const auto* e = dynamic_cast<const Error*>(&error);
  if (verbose || e == nullptr || !e->is_input()) return true;
  return launcher_rank() == 0;
}

}  // namespace nd::cli
