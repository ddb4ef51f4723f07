// `nanodist bench-comm` through the command table under mpirun: byte sizes, the CSV rank 0 writes,
// and bad flags rejected on every rank as input errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/bench_comm.h"
#include "cli/run_words.h"
#include "cli/subcommand.h"
#include "dist/world.h"
#include "tensor/error.h"

namespace nd::cli {
namespace {

using testing::input_error;
using testing::run_words;

// The header line of a CSV file and its first row.
std::pair<std::string, std::string> header_and_first_row(const std::string& path) {
  std::ifstream csv(path);
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  return {header, first};
}


TEST(CommBench, ByteSizes) {
  EXPECT_EQ(parse_byte_size("8"), 8);
  EXPECT_EQ(parse_byte_size("64K"), 65536);
  EXPECT_EQ(parse_byte_size("1G"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("4GB"), int64_t{4} << 30);
  EXPECT_THROW(parse_byte_size("1.5M"), Error);
  EXPECT_THROW(parse_byte_size("M"), Error);
  EXPECT_THROW(parse_byte_size(""), Error);
}

TEST(CommBench, CliWritesCsvAndRejectsBadFlags) {
  auto probe = dist::make_world_comm(Device::cpu());
  const std::string path = "comm_bench_test_" + std::to_string(probe->size()) + ".csv";
  EXPECT_EQ(run_words({"bench-comm", "--op", "allreduce", "--impl", "ring", "--max-bytes", "4K", "--iters", "2",
                       "--warmup", "1", "--csv", path}),
            0);
  if (probe->rank() == 0) {
    const auto [header, first] = header_and_first_row(path);
    EXPECT_EQ(header, bench_comm_csv_header());
    EXPECT_EQ(first.rfind("allreduce,ring,cpu," + std::to_string(probe->size()) + ",8,2,f32,sum,", 0), 0u) << first;
    std::remove(path.c_str());
  }
  EXPECT_TRUE(input_error({"bench-comm", "--op", "alltoone"}));
  EXPECT_TRUE(input_error({"bench-comm", "--no-such-flag"}));
  EXPECT_TRUE(input_error({"bench-comm", "--max-bytes", "1.5M"}));
  EXPECT_TRUE(input_error({"bench-comm", "--iters", "0", "--max-bytes", "64"}));
  EXPECT_TRUE(input_error({"bench-comm", "--pipeline", "9"}));
  EXPECT_TRUE(input_error({"bench-comm", "--pipe-ctas", "65"}));
  EXPECT_TRUE(input_error({"bench-comm", "--comm-timeout", "-1"}));
  EXPECT_TRUE(input_error({"bench-comm", "--heartbeat-timeout", "-5"}));
}

// The pipeline is a GPU schedule: on the CPU the ring runs as before and names itself "ring";
// the sweep runs under the fault guard with the given timeouts.
TEST(CommBench, CliTakesPipelineAndFaultFlags) {
  auto probe = dist::make_world_comm(Device::cpu());
  const std::string path = "comm_bench_pipe_test_" + std::to_string(probe->size()) + ".csv";
  EXPECT_EQ(run_words({"bench-comm", "--op", "allreduce", "--impl", "ring", "--max-bytes", "1K", "--iters", "2",
                       "--warmup", "1", "--pipeline", "2", "--pipe-ctas", "16", "--comm-timeout", "60",
                       "--heartbeat-timeout", "30", "--csv", path}),
            0);
  if (probe->rank() == 0) {
    const std::string first = header_and_first_row(path).second;
    EXPECT_EQ(first.rfind("allreduce,ring,cpu,", 0), 0u) << first;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace nd::cli
