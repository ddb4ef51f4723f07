// One family of error macros for the whole project: each throws nd::Error naming the failing
// statement, file:line and MPI rank, so tests can catch it and main() can print one line.
// Two kinds: ND_CHECK/ND_FAIL for internal failures (a bug: the statement and file:line matter),
// ND_CHECK_INPUT/ND_FAIL_INPUT for the user's input (files, flags, configs, world sizes): their
// message is a sentence saying what is wrong and what to do, and the CLI prints it alone.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace nd {

enum class ErrorKind { Internal, Input };

class Error : public std::runtime_error {
 public:
  Error(std::string what, std::string where, ErrorKind kind = ErrorKind::Internal)
      : std::runtime_error(what + " (" + where + ")"), what_(std::move(what)), where_(std::move(where)), kind_(kind) {}
  const std::string& message() const { return what_; }
  const std::string& where() const { return where_; }
  ErrorKind kind() const { return kind_; }
  bool is_input() const { return kind_ == ErrorKind::Input; }

 private:
  std::string what_;
  std::string where_;
  ErrorKind kind_;
};

// The process's rank in the world communicator, -1 until a communicator sets it.
void set_error_rank(int rank);

[[noreturn]] void throw_error(const char* statement, const char* file, int line, const std::string& message,
                              ErrorKind kind = ErrorKind::Internal);

}  // namespace nd

// Written out rather than layered so that #cond is the statement exactly as the caller wrote it.
#define ND_CHECK(cond, msg)                                                                        \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream nd_msg_;                                                                  \
      nd_msg_ << msg;                                                                              \
      ::nd::throw_error(#cond, __FILE__, __LINE__, nd_msg_.str(), ::nd::ErrorKind::Internal);      \
    }                                                                                              \
  } while (0)

#define ND_FAIL(msg)                                                                               \
  do {                                                                                             \
    std::ostringstream nd_msg_;                                                                    \
    nd_msg_ << msg;                                                                                \
    ::nd::throw_error("", __FILE__, __LINE__, nd_msg_.str(), ::nd::ErrorKind::Internal);           \
  } while (0)

#define ND_CHECK_INPUT(cond, msg)                                                                  \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::ostringstream nd_msg_;                                                                  \
      nd_msg_ << msg;                                                                              \
      ::nd::throw_error(#cond, __FILE__, __LINE__, nd_msg_.str(), ::nd::ErrorKind::Input);         \
    }                                                                                              \
  } while (0)

#define ND_FAIL_INPUT(msg)                                                                         \
  do {                                                                                             \
    std::ostringstream nd_msg_;                                                                    \
    nd_msg_ << msg;                                                                                \
    ::nd::throw_error("", __FILE__, __LINE__, nd_msg_.str(), ::nd::ErrorKind::Input);              \
  } while (0)
