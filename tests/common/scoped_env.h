// An environment variable set (or removed) for a scope and put back as it was when the scope ends,
// however it ends: a test that throws or fails an ASSERT leaves no setting behind for the tests
// after it in the same process.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace nd::test {

class ScopedEnv {
 public:
  // `value` nullopt: the variable is removed for the scope.
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) before_ = old;
    set(value);
  }
  ~ScopedEnv() { set(before_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  // A new value within the same scope (the old one still comes back at its end).
  void set(const std::optional<std::string>& value) {
    if (value)
      ::setenv(name_.c_str(), value->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> before_;
};

}  // namespace nd::test
