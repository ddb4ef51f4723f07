// The state file: a header line, the job's lines, then the progress as "key value" lines.
#include "data/prepare_state.h"

#include <sstream>

#include "data/atomic_file.h"
#include "tensor/error.h"

namespace nd {
namespace {
constexpr const char* kStateTag = "nanodist-prepare-state 1";
}

void write_prepare_state(const std::string& path, const PrepareState& state) {
  std::ostringstream out;
  out << kStateTag << "\n" << state.job << "tokenizer_hash " << state.tokenizer_hash << "\n"
      << "offset " << state.offset << "\n";
  for (int64_t count : state.parts) out << "part " << count << "\n";
  write_file_atomically(path, out.str());
}

PrepareState read_prepare_state(const std::string& path) {
  std::istringstream in(read_whole_file(path));
  std::string line;
  ND_CHECK_INPUT(std::getline(in, line) && line == kStateTag,
                 path << " is not the state of an unfinished nanodist prepare (delete its directory to start over)");
  PrepareState state;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "job") {
      state.job += line + "\n";
      continue;
    }
    bool ok = true;
    if (key == "tokenizer_hash") {
      ok = static_cast<bool>(words >> state.tokenizer_hash);
    } else if (key == "offset") {
      ok = static_cast<bool>(words >> state.offset) && state.offset >= 0;
    } else if (key == "part") {
      int64_t count = -1;
      ok = static_cast<bool>(words >> count) && count >= 0;
      state.parts.push_back(count);
    } else {
      ok = false;
    }
    ND_CHECK_INPUT(ok, path << ": cannot read the line \"" << line << "\" (delete its directory to start over)");
  }
  return state;
}

std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string lx, ly;
  while (true) {
    const bool more_x = static_cast<bool>(std::getline(x, lx)), more_y = static_cast<bool>(std::getline(y, ly));
    if (!more_x && !more_y) return "(none)";
    if (!more_x || !more_y || lx != ly)
      return "\"" + (more_x ? lx : std::string("(nothing)")) + "\" then, \"" + (more_y ? ly : std::string("(nothing)")) +
             "\" now";
  }
}

}  // namespace nd
