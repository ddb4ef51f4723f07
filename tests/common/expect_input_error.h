// The check every hostile-file test makes: reading a bad file raises nd::Error of the input kind
// (one `nanodist: error:` line, exit 1), never an internal error, with `needle` in its message.
#pragma once
#include <string>

#include <gtest/gtest.h>

#include "tensor/error.h"

namespace nd::testing {

template <typename Read>
void expect_input_error(Read&& read, const std::string& needle) {
  try {
    read();
    ADD_FAILURE() << "no error; expected one holding '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input()) << "an internal error for a bad file: " << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

}  // namespace nd::testing
