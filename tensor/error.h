// One family of error macros for the whole project: each throws nd::Error naming the failing
// statement, file:line and MPI rank, so tests can catch it and main() can print one line.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace nd {

class Error : public std::runtime_error {
 public:
  Error(std::string what, std::string where)
      : std::runtime_error(what + " (" + where + ")"), what_(std::move(what)), where_(std::move(where)) {}
  const std::string& message() const { return what_; }
  const std::string& where() const { return where_; }

 private:
  std::string what_;
  std::string where_;
};

// The process's rank in the world communicator, -1 until a communicator sets it.
void set_error_rank(int rank);
int error_rank();

[[noreturn]] void throw_error(const char* statement, const char* file, int line, const std::string& message);

}  // namespace nd

#define ND_CHECK(cond, msg)                                                 \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::ostringstream nd_msg_;                                           \
      nd_msg_ << msg;                                                       \
      ::nd::throw_error(#cond, __FILE__, __LINE__, nd_msg_.str());          \
    }                                                                       \
  } while (0)

#define ND_FAIL(msg)                                                        \
  do {                                                                      \
    std::ostringstream nd_msg_;                                             \
    nd_msg_ << msg;                                                         \
    ::nd::throw_error("", __FILE__, __LINE__, nd_msg_.str());               \
  } while (0)
