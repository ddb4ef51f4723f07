// `nanodist-lab bench-comm` in-process under mpirun on the CPU: --impl compare's CSV, and the lab's
// flags refused where they cannot run (the GEMM load needs a GPU) or are malformed.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli/bench_comm.h"
#include "dist/comm/world.h"
#include "lab/bench_comm_lab.h"
#include "tensor/error.h"

namespace nd::lab {
namespace {

int run_lab(const std::vector<std::string>& words) {
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  return run_lab_bench_comm(static_cast<int>(argv.size()), argv.data());
}

bool lab_input_error(const std::vector<std::string>& words) {
  try {
    run_lab(words);
  } catch (const Error& e) {
    return e.is_input();
  }
  return false;
}

// --impl compare writes one CSV row per (size, implementation that ran): on the CPU no peer
// memory, so ring, native and auto, every row with its timing.
TEST(LabBenchComm, CompareWritesEveryImplementationPerSize) {
  auto probe = dist::make_world_comm(Device::cpu());
  const std::string csv = "comm_bench_compare_test_" + std::to_string(probe->size()) + ".csv";
  EXPECT_EQ(run_lab({"bench-comm", "--op", "allreduce", "--impl", "compare", "--max-bytes", "1K", "--factor", "4",
                       "--iters", "2", "--warmup", "1", "--csv", csv}),
            0);
  if (probe->rank() == 0) {
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, cli::bench_comm_csv_header());
    std::vector<std::string> impls;
    while (std::getline(in, line)) {
      EXPECT_EQ(line.rfind("allreduce,", 0), 0u) << line;
      EXPECT_EQ(line.substr(line.size() - 6), ",eager") << line;
      impls.push_back(line.substr(10, line.find(',', 10) - 10));
    }
    // 8, 32, 128, 512 B: ring, native, auto each.
    ASSERT_EQ(impls.size(), 12u);
    for (size_t i = 0; i < impls.size(); i += 3) {
      EXPECT_EQ(impls[i], "ring");
      EXPECT_EQ(impls[i + 1], "native");
      EXPECT_EQ(impls[i + 2], "auto");
    }
    std::remove(csv.c_str());
  }
  EXPECT_TRUE(lab_input_error({"bench-comm", "--op", "allgather", "--impl", "compare"}));
  EXPECT_TRUE(lab_input_error({"bench-comm", "--op", "allreduce", "--impl", "compare", "--fit"}));
}

TEST(LabBenchComm, TheGemmLoadNeedsAGpuAndAShape) {
  EXPECT_TRUE(lab_input_error({"bench-comm", "--load", "gemm", "--max-bytes", "64"}));
  EXPECT_TRUE(lab_input_error({"bench-comm", "--load", "fft", "--max-bytes", "64"}));
  EXPECT_TRUE(lab_input_error({"bench-comm", "--load-shape", "8192x8192", "--max-bytes", "64"}));
  EXPECT_TRUE(lab_input_error({"bench-comm", "--load-shape", "0x1x1", "--max-bytes", "64"}));
}

}  // namespace
}  // namespace nd::lab
