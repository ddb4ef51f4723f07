// bench-comm on the CPU under mpirun: every op and impl sweeps a few sizes with no wrong
// elements; bus factors follow nccl-tests; the CLI writes its CSV and rejects bad flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dist/comm_bench.h"
#include "dist/world.h"

namespace nd::dist {
namespace {

TEST(CommBench, EveryOpAndImplIsCorrect) {
  auto comm = make_world_comm(Device::cpu());
  for (BenchOp op : {BenchOp::AllReduce, BenchOp::SendRecv, BenchOp::AllGather, BenchOp::ReduceScatter}) {
    for (bool ring : {false, true}) {
      for (DType dtype : {DType::F32, DType::BF16}) {
        SCOPED_TRACE(std::string(bench_op_name(op)) + (ring ? " ring " : " native ") + dtype_name(dtype));
        BenchCommOptions options;
        options.op = op;
        options.ring = ring;
        options.dtype = dtype;
        options.min_bytes = 8;
        options.max_bytes = 256 << 10;
        options.factor = 8;
        options.warmup = 1;
        options.iters = 2;
        std::vector<BenchCommRow> rows = run_bench_comm(*comm, options);
        ASSERT_GE(rows.size(), 5u);
        for (const BenchCommRow& row : rows) {
          EXPECT_EQ(row.wrong, 0) << "size " << row.bytes;
          EXPECT_GT(row.time_us, 0.0);
          EXPECT_NEAR(row.busbw_gbps, row.algbw_gbps * bus_factor(op, comm->size()), 1e-9 * row.busbw_gbps);
          EXPECT_EQ(row.bytes, row.count * static_cast<int64_t>(dtype_size(dtype)));
        }
      }
    }
  }
}

TEST(CommBench, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::ReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::SendRecv, 8), 1.0);
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
  auto probe = make_world_comm(Device::cpu());
  const std::string path = "comm_bench_test_" + std::to_string(probe->size()) + ".csv";
  std::vector<std::string> words = {"bench-comm", "--op",   "allreduce", "--impl",   "ring", "--max-bytes",
                                    "4K",         "--iters", "2",        "--warmup", "1",    "--csv",
                                    path};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  EXPECT_EQ(run_bench_comm_cli(static_cast<int>(argv.size()), argv.data()), 0);
  if (probe->rank() == 0) {
    std::ifstream csv(path);
    std::string header, first;
    std::getline(csv, header);
    std::getline(csv, first);
    EXPECT_EQ(header, bench_comm_csv_header());
    EXPECT_EQ(first.rfind("allreduce,ring,cpu," + std::to_string(probe->size()) + ",8,2,f32,sum,", 0), 0u) << first;
    std::remove(path.c_str());
  }
  std::vector<std::string> bad = {"bench-comm", "--op", "alltoall"};
  std::vector<char*> bad_argv;
  for (std::string& w : bad) bad_argv.push_back(w.data());
  EXPECT_THROW(run_bench_comm_cli(static_cast<int>(bad_argv.size()), bad_argv.data()), Error);
  std::vector<std::string> unknown = {"bench-comm", "--no-such-flag"};
  std::vector<char*> unknown_argv;
  for (std::string& w : unknown) unknown_argv.push_back(w.data());
  EXPECT_THROW(run_bench_comm_cli(static_cast<int>(unknown_argv.size()), unknown_argv.data()), Error);
}

}  // namespace
}  // namespace nd::dist
