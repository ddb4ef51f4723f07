// bench-comm's measurement on the CPU under mpirun: every op and impl sweeps a few sizes with no
// wrong elements; the point-to-point matrix covers every ordered pair; bus factors follow nccl-tests. (The command itself: tests/cli/bench_comm_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dist/comm/bench/bench_timing.h"
#include "dist/comm/bench/comm_bench.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/world.h"

namespace nd::dist {
namespace {

TEST(CommBench, EveryOpAndImplIsCorrect) {
  auto comm = make_world_comm(Device::cpu());
  for (BenchOp op : {BenchOp::AllReduce, BenchOp::SendRecv, BenchOp::AllGather, BenchOp::ReduceScatter,
                     BenchOp::Broadcast, BenchOp::AllToAll}) {
    for (bool ring : {false, true}) {
      for (DType dtype : {DType::F32, DType::BF16}) {
        SCOPED_TRACE(std::string(bench_op_name(op)) + (ring ? " ring " : " native ") + dtype_name(dtype));
        BenchCommOptions options;
        options.op = op;
        options.algorithm = ring ? Algorithm::Ring : Algorithm::Native;
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

TEST(CommBench, PointToPointMatrixCoversEveryPair) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size();
  BenchCommOptions options;
  options.min_bytes = 8;
  options.max_bytes = 64 << 10;
  options.warmup = 1;
  options.iters = 2;
  std::vector<P2pCell> cells = run_p2p_matrix(*comm, options);
  ASSERT_EQ(cells.size(), static_cast<size_t>(n * (n - 1)));
  size_t i = 0;
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      EXPECT_EQ(cells[i].src, src);
      EXPECT_EQ(cells[i].dst, dst);
      EXPECT_EQ(cells[i].wrong, 0);
      EXPECT_GT(cells[i].latency_us, 0.0);
      EXPECT_GT(cells[i].bw_gbps, 0.0);
      ++i;
    }
}

// time_launches runs exactly warmup + iters calls (eager) and agrees on one time over ranks; a
// CUDA graph needs a GPU comm.
TEST(CommBench, EagerTimingRunsEveryCallAndAgreesOverRanks) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size();
  Tensor a = Tensor::full({64}, 1.0);
  int calls = 0;
  const double seconds = time_launches(*comm, BenchTiming::Eager, 3, 7, [&] {
    ++calls;
    return comm->allreduce_async(a, ReduceOp::Sum);
  });
  EXPECT_EQ(calls, 10);
  // Ten sums in place of ones over n ranks: n^10 exactly, so every call ran on every rank.
  EXPECT_EQ(a.to_double_vector(), std::vector<double>(64, std::pow(static_cast<double>(n), 10)));
  EXPECT_GT(seconds, 0.0);
  double largest = seconds;
  comm->host_allreduce(&largest, 1, HostReduce::Max);
  EXPECT_EQ(seconds, largest);
  EXPECT_THROW(time_launches(*comm, BenchTiming::Graph, 1, 1, [&] { return comm->allreduce_async(a, ReduceOp::Sum); }),
               Error);
  EXPECT_EQ(parse_bench_timing("graph"), BenchTiming::Graph);
  EXPECT_THROW(parse_bench_timing("lazy"), Error);
}

TEST(CommBench, BusFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::AllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::ReduceScatter, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::SendRecv, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::Broadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(BenchOp::AllToAll, 4), 0.75);
}

}  // namespace
}  // namespace nd::dist
