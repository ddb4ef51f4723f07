// The peer-memory decorator where there is no peer memory (MPI on the CPU): it says why, every
// collective is the wrapped comm's (closed forms at np 2, 3, 4), a grid asked for peer or auto
// sums like native; and auto's choice by size from per-choice curves (decide_by_size, a saved
// bench-comm sweep).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/peer_comm.h"
#include "dist/comm/world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::sum_over_ranks;

TEST(PeerComm, WithoutPeerMemoryEverythingIsTheWrappedComms) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), r = world->rank();
  for (PeerMode mode : {PeerMode::OneShot, PeerMode::Peer, PeerMode::Auto, PeerMode::Push}) {
    PeerOptions options;
    options.mode = mode;
    PeerComm peer(*world, options);
    EXPECT_FALSE(peer.peer_usable());
    EXPECT_FALSE(peer.unusable_reason().empty());
    EXPECT_EQ(peer.choice(64), mode == PeerMode::Auto ? AllReduceChoice::Native : peer.choice(64));
    Tensor a = rank_input(r, 1001, DType::F32, 31);
    peer.allreduce(a, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(a.to_double_vector(), sum_over_ranks(n, 1001, 31), 0, "sum"), 0);
    Tensor b = Tensor::full({3}, static_cast<double>(r));
    peer.broadcast(b, n - 1);
    EXPECT_EQ(b.to_double_vector(), std::vector<double>(3, n - 1.0));
    std::unique_ptr<Comm> half = peer.split(r % 2, r);
    EXPECT_NE(dynamic_cast<PeerComm*>(half.get()), nullptr);
  }
}

TEST(PeerComm, GridOfPeerOrAutoSumsLikeNative) {
  auto world = make_world_comm(Device::cpu());
  const int n = world->size(), r = world->rank();
  for (const char* name : {"peer", "auto"}) {
    GridOptions options;
    options.collectives = parse_collectives(name);
    ParallelGrid grid(*world, options);
    EXPECT_STREQ(collectives_name(grid.collectives()), name);
    Tensor a = rank_input(r, 333, DType::F32, 32);
    grid.dp().allreduce(a, ReduceOp::Sum);
    EXPECT_EQ(count_mismatches(a.to_double_vector(), sum_over_ranks(n, 333, 32), 0, name), 0);
  }
  EXPECT_THROW(parse_collectives("peers"), Error);
}

// One-shot fastest to 16 KB, two-shot to its 1 MB buffer, the ring to 2 MB, NCCL above.
double synthetic_time_us(AllReduceChoice c, int64_t bytes) {
  const double b = static_cast<double>(bytes);
  switch (c) {
    case AllReduceChoice::OneShot: return bytes > (1 << 20) ? -1.0 : 4.0 + b / 4e3;
    case AllReduceChoice::TwoShot: return bytes > (1 << 20) ? -1.0 : 8.0 + b / 1.5e4;
    case AllReduceChoice::Ring: return 20.0 + b / 1e4;
    case AllReduceChoice::Native: return 400.0 + b / 2.2e5;
    case AllReduceChoice::Push: return -1.0;
  }
  return -1.0;
}

TEST(PeerComm, AutoPicksTheFastestByRuns) {
  auto time_us = [](AllReduceChoice c, int64_t bytes) {
    const double b = static_cast<double>(bytes);
    switch (c) {
      case AllReduceChoice::OneShot: return bytes > (1 << 20) ? -1.0 : 4.0 + b / 4e3;
      case AllReduceChoice::TwoShot: return bytes > (1 << 20) ? -1.0 : 8.0 + b / 1.5e4;
      case AllReduceChoice::Ring: return 20.0 + b / 1e4;
      case AllReduceChoice::Native: return 400.0 + b / 2.2e5;
      case AllReduceChoice::Push: return -1.0;
    }
    return -1.0;
  };
  std::vector<std::pair<int64_t, AllReduceChoice>> table = decide_by_size(time_us);
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[0], std::make_pair(int64_t{16} << 10, AllReduceChoice::OneShot));
  EXPECT_EQ(table[1], std::make_pair(int64_t{1} << 20, AllReduceChoice::TwoShot));
  EXPECT_EQ(table[2].second, AllReduceChoice::Ring);
  EXPECT_EQ(table[3], std::make_pair(int64_t{1} << 40, AllReduceChoice::Native));
  EXPECT_EQ(table[2].first, int64_t{2} << 20);  // 20 + b/1e4 = 400 + b/2.2e5 at 3.98 MB
}

// A sweep saved by `bench-comm --impl compare --csv` decides like the curves it holds: the
// synthetic curves at powers of two to 64 MB (the peer choices to their 1 MB buffer) give the
// table decide_by_size gives them (above 64 MB the fitted ring and NCCL lines carry on); rows of
// the other timing, other rank counts, other ops and auto itself are left out.
TEST(PeerComm, AutoDecidesFromASavedSweep) {
  const AllReduceChoice choices[] = {AllReduceChoice::OneShot, AllReduceChoice::TwoShot, AllReduceChoice::Ring,
                                     AllReduceChoice::Native};
  std::string csv = "op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong,timing\n";
  char line[256];
  for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 2) {
    for (AllReduceChoice c : choices) {
      const double t = synthetic_time_us(c, bytes);
      if (t < 0) continue;
      std::snprintf(line, sizeof line, "allreduce,%s,cuda,2,%lld,%lld,f32,sum,%.6f,1,1,0,eager\n", choice_name(c),
                    static_cast<long long>(bytes), static_cast<long long>(bytes / 4), t);
      csv += line;
      // Decoys: NCCL "fastest" in graph timing, on 4 ranks and for all-gather; auto's own row.
      std::snprintf(line, sizeof line, "allreduce,native,cuda,2,%lld,1,f32,sum,0.5,1,1,0,graph\n", static_cast<long long>(bytes));
      csv += line;
      std::snprintf(line, sizeof line, "allreduce,native,cuda,4,%lld,1,f32,sum,0.5,1,1,0,eager\n", static_cast<long long>(bytes));
      csv += line;
      std::snprintf(line, sizeof line, "allgather,native,cuda,2,%lld,1,f32,none,0.5,1,1,0,eager\n", static_cast<long long>(bytes));
      csv += line;
      std::snprintf(line, sizeof line, "allreduce,auto,cuda,2,%lld,1,f32,sum,0.5,1,1,0,eager\n", static_cast<long long>(bytes));
      csv += line;
    }
  }
  const auto table = decide_from_sweep(csv, "sweep.csv", 2, BenchTiming::Eager, int64_t{1} << 20);
  EXPECT_EQ(table, decide_by_size(synthetic_time_us));
  // The graph rows win where graph timing is asked for: NCCL everywhere.
  const auto graph = decide_from_sweep(csv, "sweep.csv", 2, BenchTiming::Graph, int64_t{1} << 20);
  ASSERT_EQ(graph.size(), 1u);
  EXPECT_EQ(graph[0].second, AllReduceChoice::Native);
  EXPECT_THROW(decide_from_sweep(csv, "sweep.csv", 3, BenchTiming::Eager, 1 << 20), Error);  // no row for 3 ranks
  EXPECT_THROW(decide_from_sweep(csv + "allreduce,ring,cuda,2,oops\n", "sweep.csv", 2, BenchTiming::Eager, 1 << 20),
               Error);
  EXPECT_THROW(decide_from_sweep(csv + "allreduce,ring,cuda,2,64,16,f32,sum,x,1,1,0,eager\n", "sweep.csv", 2,
                                 BenchTiming::Eager, 1 << 20),
               Error);
}

// Push rows in a sweep: push wins where it is fastest, but only up to the receive area this comm
// has (push_max_bytes), whatever sizes the sweep measured it at; one-shot takes over above.
TEST(PeerComm, AutoPushesOnlyUpToItsArea) {
  std::string csv = "op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong,timing\n";
  char line[256];
  for (int64_t bytes = 8; bytes <= (int64_t{1} << 20); bytes *= 2) {
    const double b = static_cast<double>(bytes);
    const std::pair<const char*, double> rows[] = {
        {"push", 3.0 + b / 1e5}, {"oneshot", 4.5 + b / 1e5}, {"twoshot", 8.0 + b / 1e5}, {"native", 6.0 + b / 1e5}};
    for (const auto& [impl, t] : rows) {
      std::snprintf(line, sizeof line, "allreduce,%s,cuda,2,%lld,%lld,f32,sum,%.6f,1,1,0,graph\n", impl,
                    static_cast<long long>(bytes), static_cast<long long>(bytes / 4), t);
      csv += line;
    }
  }
  const auto everywhere = decide_from_sweep(csv, "sweep.csv", 2, BenchTiming::Graph, int64_t{1} << 20);
  ASSERT_EQ(everywhere.size(), 2u);  // push to the last measured size, then NCCL (fitted above)
  EXPECT_EQ(everywhere[0], std::make_pair(int64_t{1} << 20, AllReduceChoice::Push));
  EXPECT_EQ(everywhere[1].second, AllReduceChoice::Native);
  const auto small_area = decide_from_sweep(csv, "sweep.csv", 2, BenchTiming::Graph, int64_t{1} << 20, 32 << 10);
  ASSERT_EQ(small_area.size(), 3u);
  EXPECT_EQ(small_area[0], std::make_pair(int64_t{32} << 10, AllReduceChoice::Push));
  EXPECT_EQ(small_area[1], std::make_pair(int64_t{1} << 20, AllReduceChoice::OneShot));
  EXPECT_EQ(small_area[2].second, AllReduceChoice::Native);
  EXPECT_TRUE(is_peer_choice(AllReduceChoice::Push));
  EXPECT_FALSE(is_peer_choice(AllReduceChoice::Ring));
  EXPECT_EQ(parse_peer_mode("push"), PeerMode::Push);
  EXPECT_STREQ(choice_name(AllReduceChoice::Push), "push");
}

}  // namespace
}  // namespace nd::dist
