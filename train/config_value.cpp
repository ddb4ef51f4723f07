// Strict text-to-value conversions: "12x" is not an integer, " 3 " is.
#include "train/config_value.h"

#include <cerrno>
#include <cstdlib>

#include "tensor/error.h"

namespace nd::train {
namespace {

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

int64_t parse_int_value(const std::string& text, const std::string& what) {
  std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  ND_CHECK_INPUT(!t.empty() && end == t.c_str() + t.size() && errno == 0,
                 "bad value '" << text << "' for " << what << ": expected an integer");
  return v;
}

double parse_double_value(const std::string& text, const std::string& what) {
  std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  ND_CHECK_INPUT(!t.empty() && end == t.c_str() + t.size() && errno == 0,
                 "bad value '" << text << "' for " << what << ": expected a number");
  return v;
}

bool parse_bool_value(const std::string& text, const std::string& what) {
  std::string t = trim(text);
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  ND_FAIL_INPUT("bad value '" << text << "' for " << what << ": expected true or false");
}

}  // namespace nd::train
