// env_equals: true only for the exact value (not a prefix, not another case, not unset or empty).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "tensor/env.h"

namespace nd {
namespace {

TEST(Env, EqualsOnlyTheExactValue) {
  const char* name = "NANODIST_ENV_TEST_SWITCH";
  ::unsetenv(name);
  EXPECT_FALSE(env_equals(name, "1"));
  EXPECT_FALSE(env_equals(name, ""));
  ::setenv(name, "", 1);
  EXPECT_TRUE(env_equals(name, ""));
  EXPECT_FALSE(env_equals(name, "0"));
  ::setenv(name, "normal", 1);
  EXPECT_TRUE(env_equals(name, "normal"));
  EXPECT_FALSE(env_equals(name, "norm"));
  EXPECT_FALSE(env_equals(name, "normally"));
  EXPECT_FALSE(env_equals(name, "Normal"));
  ::unsetenv(name);
}

}  // namespace
}  // namespace nd
