// nanodist-lab bench-kernels: its --help lists the shape flags, and bad flags are input errors
// before any CUDA call (so these run on any machine).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lab/bench_kernels.h"
#include "tensor/error.h"

namespace nd::lab {
namespace {

int run(std::vector<const char*> args) {
  args.insert(args.begin(), "bench-kernels");
  return run_lab_bench_kernels(static_cast<int>(args.size()), args.data());
}

std::string input_error(std::vector<const char*> args) {
  try {
    run(std::move(args));
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input()) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(LabBenchKernels, HelpListsTheShapeFlags) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(run({"--help"}), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  for (const char* flag : {"--dtype", "--batch", "--seq", "--embd", "--heads", "--vocab", "--iters"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
}

TEST(LabBenchKernels, BadFlagsAreInputErrors) {
  EXPECT_NE(input_error({"--dtype", "f16"}).find("--dtype must be bf16 or f32"), std::string::npos);
  EXPECT_NE(input_error({"--embd", "100", "--heads", "12"}).find("not divisible by --heads"), std::string::npos);
  EXPECT_NE(input_error({"--iters", "0"}).find("must be positive"), std::string::npos);
}

}  // namespace
}  // namespace nd::lab
