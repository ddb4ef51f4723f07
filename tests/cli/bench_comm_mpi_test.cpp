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
#include "dist/comm/bench/comm_model.h"
#include "dist/comm/world.h"
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
  EXPECT_TRUE(input_error({"bench-comm", "--comm-timeout", "-1"}));
  EXPECT_TRUE(input_error({"bench-comm", "--heartbeat-timeout", "-5"}));
}

// The sweep runs under the fault guard with the given timeouts. The pipelined ring's flags are
// read and refused, naming the step-by-step ring that runs instead; --pipeline 1 was that ring.
TEST(CommBench, CliTakesFaultFlagsAndRefusesThePipelinedRing) {
  auto probe = dist::make_world_comm(Device::cpu());
  const std::string path = "comm_bench_fault_test_" + std::to_string(probe->size()) + ".csv";
  EXPECT_EQ(run_words({"bench-comm", "--op", "allreduce", "--impl", "ring", "--max-bytes", "1K", "--iters", "2",
                       "--warmup", "1", "--pipeline", "1", "--comm-timeout", "60", "--heartbeat-timeout", "30",
                       "--csv", path}),
            0);
  if (probe->rank() == 0) {
    const std::string first = header_and_first_row(path).second;
    EXPECT_EQ(first.rfind("allreduce,ring,cpu,", 0), 0u) << first;
    std::remove(path.c_str());
  }
  for (const char* flag : {"--pipeline", "--pipe-ctas"}) {
    try {
      run_words({"bench-comm", "--impl", "ring", flag, "2"});
      ADD_FAILURE() << flag << " 2 was taken";
    } catch (const Error& e) {
      EXPECT_TRUE(e.is_input());
      EXPECT_NE(e.message().find("--impl ring"), std::string::npos) << e.message();
    }
  }
}

// --fit appends an alpha-beta fit that nanodist plan can read; the peer impls are all-reduces and on
// the CPU (no peer memory) run as the backend's; the p2p matrix writes one row per ordered pair.
TEST(CommBench, CliFitsPeersAndMatrix) {
  auto probe = dist::make_world_comm(Device::cpu());
  const int n = probe->size();
  const std::string table = "comm_bench_fit_test_" + std::to_string(n) + ".csv";
  if (probe->rank() == 0) std::remove(table.c_str());
  for (const char* impl : {"native", "ring"})
    EXPECT_EQ(run_words({"bench-comm", "--op", "allgather", "--impl", impl, "--max-bytes", "64K", "--iters", "2",
                         "--warmup", "1", "--fit", "--fit-table", table}),
              0);
  if (probe->rank() == 0) {
    // One row per piece of each fit (a noisy CPU curve may take several); the pieces of a fit
    // cover the sweep's points once.
    std::vector<dist::AlphaBetaFit> fits = dist::read_fit_table(table);
    ASSERT_GE(fits.size(), 2u);
    EXPECT_EQ(fits[0].op, "allgather");
    EXPECT_EQ(fits.back().impl, "ring");
    for (const char* impl : {"native", "ring"}) {
      const dist::CollectiveModel model = dist::find_model(fits, "allgather", impl, n);
      ASSERT_FALSE(model.empty()) << impl;
      int points = 0;
      for (const dist::AlphaBetaFit& piece : model.pieces) {
        EXPECT_EQ(piece.nranks, n);
        EXPECT_LE(piece.min_bytes, piece.max_bytes);
        points += piece.points;
      }
      EXPECT_GE(points, 12) << impl;  // 8 B .. 64 KB, less the small sizes that round to one block of n
    }
    std::remove(table.c_str());
  }
  const std::string csv = "comm_bench_peer_test_" + std::to_string(n) + ".csv";
  EXPECT_EQ(run_words({"bench-comm", "--op", "allreduce", "--impl", "auto", "--max-bytes", "1K", "--iters", "2",
                       "--warmup", "1", "--csv", csv}),
            0);
  if (probe->rank() == 0) {
    EXPECT_EQ(header_and_first_row(csv).second.rfind("allreduce,native,cpu,", 0), 0u);
    std::remove(csv.c_str());
  }
  const std::string matrix = "comm_bench_p2p_test_" + std::to_string(n) + ".csv";
  EXPECT_EQ(run_words({"bench-comm", "--op", "p2p-matrix", "--max-bytes", "4K", "--iters", "2", "--warmup", "1",
                       "--csv", matrix}),
            0);
  if (probe->rank() == 0) {
    std::ifstream in(matrix);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) ++lines;
    EXPECT_EQ(lines, 1 + n * (n - 1));
    std::remove(matrix.c_str());
  }
  EXPECT_TRUE(input_error({"bench-comm", "--op", "allgather", "--impl", "oneshot"}));
  EXPECT_TRUE(input_error({"bench-comm", "--impl", "threeshot"}));
  EXPECT_TRUE(input_error({"bench-comm", "--fit-table", "x.csv"}));
}

// The lab's measurements are not bench-comm's (lab/: nanodist-lab bench-comm); graph timing needs a GPU.
TEST(BenchCommCommand, LabImplsAndBadTimingsAreInputErrors) {
  EXPECT_TRUE(input_error({"bench-comm", "--op", "allreduce", "--impl", "compare"}));
  EXPECT_TRUE(input_error({"bench-comm", "--load", "gemm", "--max-bytes", "64"}));
  EXPECT_TRUE(input_error({"bench-comm", "--op", "allreduce", "--timing", "graph"}));
  EXPECT_TRUE(input_error({"bench-comm", "--op", "allreduce", "--timing", "lazy"}));
}

}  // namespace
}  // namespace nd::cli
