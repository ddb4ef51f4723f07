// Formats the "where" part of nd::Error: statement, file:line and rank.
#include "tensor/error.h"

namespace nd {

namespace {
int g_rank = -1;
}

void set_error_rank(int rank) { g_rank = rank; }

void throw_error(const char* statement, const char* file, int line, const std::string& message, ErrorKind kind) {
  std::string path(file);
  // Keep the path from the project root: "tensor/tensor.cpp" reads better than an absolute path.
  // tests/ first: its folders mirror the others (tests/cli/x.cpp is not cli/x.cpp).
  for (const char* top :
       {"/tests/", "/tensor/", "/kernels/", "/autograd/", "/nn/", "/dist/", "/data/", "/train/", "/cli/"}) {
    auto pos = path.rfind(top);
    if (pos != std::string::npos) {
      path = path.substr(pos + 1);
      break;
    }
  }
  std::ostringstream where;
  if (statement && *statement) where << "check `" << statement << "` at ";
  where << path << ":" << line;
  if (g_rank >= 0) where << ", rank " << g_rank;
  throw Error(message, where.str(), kind);
}

}  // namespace nd
