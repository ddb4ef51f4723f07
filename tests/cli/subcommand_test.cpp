// The command table and the error line: every command answers --help in the same shape through
// the dispatcher, the top-level help lists the table, unknown commands and flags are input
// errors, and an error line shows file:line for internal errors always and for input errors only
// when verbose.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "cli/error_line.h"
#include "cli/run_words.h"
#include "cli/subcommand.h"
#include "tensor/error.h"
#include "tests/common/scoped_env.h"

namespace nd::cli {
namespace {

using testing::run_words;

std::string stdout_of(const std::vector<std::string>& words, int* status) {
  ::testing::internal::CaptureStdout();
  *status = run_words(words);
  return ::testing::internal::GetCapturedStdout();
}

Error error_of(const std::vector<std::string>& words) {
  try {
    run_words(words);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error from " << words.front();
  return Error("", "");
}

TEST(Subcommands, NamesAreUniqueAndEachHasASummary) {
  const std::vector<Subcommand>& table = subcommands();
  // The commands of the command-line contract, in the order `nanodist --help` lists them.
  const std::vector<std::string> expected = {"prepare", "train",      "eval",  "sample", "ablate",
                                             "sweep",   "bench-comm", "watch", "plan"};
  ASSERT_EQ(table.size(), expected.size());
  for (size_t i = 0; i < table.size(); ++i) EXPECT_EQ(table[i].name, expected[i]);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_FALSE(std::string(table[i].summary).empty()) << table[i].name;
    for (size_t j = i + 1; j < table.size(); ++j) EXPECT_STRNE(table[i].name, table[j].name);
  }
}

TEST(Subcommands, TopLevelHelpListsTheTable) {
  int status = -1;
  std::string help = stdout_of({"--help"}, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(help, commands_help());
  for (const Subcommand& c : subcommands()) {
    EXPECT_NE(help.find(std::string("  ") + c.name + " "), std::string::npos) << c.name;
    EXPECT_NE(help.find(c.summary), std::string::npos) << c.name;
  }
  EXPECT_EQ(stdout_of({}, &status), commands_help());
  EXPECT_EQ(status, 1) << "no command is a usage error";
}

TEST(Subcommands, EveryCommandsHelpHasTheSameShape) {
  for (const Subcommand& c : subcommands()) {
    SCOPED_TRACE(c.name);
    int status = -1;
    std::string help = stdout_of({c.name, "--help"}, &status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(help, c.flags().help());
    EXPECT_EQ(help.rfind(std::string("usage: nanodist ") + c.name + " ", 0), 0u) << help;
    EXPECT_NE(help.find("\ngeneral:\n"), std::string::npos) << help;
    EXPECT_NE(help.find("  --verbose "), std::string::npos) << help;
    const std::string last = "  --help, -h                   this list\n";
    ASSERT_GE(help.size(), last.size());
    EXPECT_EQ(help.substr(help.size() - last.size()), last) << help;
    const FlagSet set = c.flags();
    for (const FlagSpec& f : set.specs())  // every flag but those read and not listed
      EXPECT_EQ(help.find("  --" + f.name + " ") != std::string::npos, !f.hidden) << f.name;
  }
}

TEST(Subcommands, EveryCommandTakesVerboseAndRejectsUnknownFlagsAsInput) {
  for (const Subcommand& c : subcommands()) {
    SCOPED_TRACE(c.name);
    std::vector<const char*> argv = {c.name, "--verbose"};
    EXPECT_TRUE(c.flags().parse(2, argv.data()).verbose);
    Error e = error_of({c.name, "--no-such-flag", "1"});
    EXPECT_TRUE(e.is_input()) << e.what();
    EXPECT_NE(e.message().find("no-such-flag"), std::string::npos) << e.what();
  }
  Error e = error_of({"fly"});
  EXPECT_TRUE(e.is_input());
  EXPECT_NE(e.message().find("unknown command 'fly'"), std::string::npos) << e.what();
  for (const Subcommand& c : subcommands()) EXPECT_NE(e.message().find(c.name), std::string::npos) << c.name;
}

Error thrown_by(void (*fn)()) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "nothing thrown";
  return Error("", "");
}

TEST(ErrorLine, InputErrorsAreASentenceUnlessVerbose) {
  Error input = thrown_by([] { ND_CHECK_INPUT(1 + 1 == 3, "--x must be 3; pass --x 3"); });
  EXPECT_TRUE(input.is_input());
  EXPECT_EQ(error_line(input, false), "nanodist: error: --x must be 3; pass --x 3");
  std::string verbose = error_line(input, true);
  EXPECT_EQ(verbose.rfind("nanodist: error: --x must be 3; pass --x 3 (check `1 + 1 == 3` at tests/cli/", 0), 0u)
      << verbose;
  EXPECT_NE(verbose.find("subcommand_test.cpp:"), std::string::npos) << verbose;
  Error failed = thrown_by([] { ND_FAIL_INPUT("no such file"); });
  EXPECT_TRUE(failed.is_input());
  EXPECT_EQ(error_line(failed, false), "nanodist: error: no such file");
}

TEST(ErrorLine, InternalErrorsAlwaysNameTheCheck) {
  Error internal = thrown_by([] { ND_CHECK(2 < 1, "broken invariant"); });
  EXPECT_FALSE(internal.is_input());
  for (bool verbose : {false, true}) {
    std::string line = error_line(internal, verbose);
    EXPECT_EQ(line.rfind("nanodist: error: broken invariant (check `2 < 1` at tests/cli/subcommand_test.cpp:", 0), 0u)
        << line;
  }
  Error failed = thrown_by([] { ND_FAIL("unreachable"); });
  EXPECT_NE(error_line(failed, false).find("(tests/cli/subcommand_test.cpp:"), std::string::npos);
  std::runtime_error other("std failure");
  EXPECT_EQ(error_line(other, false).rfind("nanodist: error: std failure (", 0), 0u);
}

TEST(ErrorLine, AFailedAllocationSaysTheHostIsOutOfMemory) {
  EXPECT_EQ(error_line(std::bad_alloc(), false),
            "nanodist: error: out of host memory (std::bad_alloc): the run's sizes do not fit this machine; a smaller "
            "--batch-size, --block-size or model would");
}

TEST(ErrorLine, VerboseFromTheFlagOrTheEnvironment) {
  test::ScopedEnv verbose("NANODIST_VERBOSE", std::nullopt);
  std::vector<const char*> plain = {"nanodist", "train", "--lr", "1"};
  std::vector<const char*> flag = {"nanodist", "train", "--verbose", "--lr", "1"};
  std::vector<const char*> flag_off = {"nanodist", "train", "--verbose", "false"};
  EXPECT_FALSE(verbose_errors(static_cast<int>(plain.size()), plain.data()));
  EXPECT_TRUE(verbose_errors(static_cast<int>(flag.size()), flag.data()));
  EXPECT_FALSE(verbose_errors(static_cast<int>(flag_off.size()), flag_off.data()));
  verbose.set("1");
  EXPECT_TRUE(verbose_errors(static_cast<int>(plain.size()), plain.data()));
  verbose.set("0");
  EXPECT_FALSE(verbose_errors(static_cast<int>(plain.size()), plain.data()));
}

}  // namespace
}  // namespace nd::cli
