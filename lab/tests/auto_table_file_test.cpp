// The lab's auto tables from saved bench-comm files (lab/auto_table_file.h): a sweep decides like
// the curves it holds (its rows of other timings, rank counts and ops left out; malformed rows an
// error), and push only up to its receive area.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "lab/auto_table_file.h"

namespace nd::lab {
namespace {

using namespace nd::dist;

// One-shot fastest to 16 KB, two-shot to its 1 MB buffer, the ring to 2 MB, NCCL above.
double synthetic_time_us(Algorithm c, int64_t bytes) {
  const double b = static_cast<double>(bytes);
  switch (c) {
    case Algorithm::OneShot: return bytes > (1 << 20) ? -1.0 : 4.0 + b / 4e3;
    case Algorithm::TwoShot: return bytes > (1 << 20) ? -1.0 : 8.0 + b / 1.5e4;
    case Algorithm::Ring: return 20.0 + b / 1e4;
    case Algorithm::Native: return 400.0 + b / 2.2e5;
    default: return -1.0;  // push and the policies: never
  }
}

// A sweep saved by `bench-comm --csv` decides like the curves it holds: the
// synthetic curves at powers of two to 64 MB (the peer choices to their 1 MB buffer) give the
// table decide_by_size gives them (above 64 MB the fitted ring and NCCL lines carry on); rows of
// the other timing, other rank counts, other ops and auto itself are left out.
TEST(AutoTableFile, AutoDecidesFromASavedSweep) {
  const Algorithm choices[] = {Algorithm::OneShot, Algorithm::TwoShot, Algorithm::Ring,
                                     Algorithm::Native};
  std::string csv = "op,impl,device,nranks,size,count,type,redop,time_us,algbw_gbps,busbw_gbps,wrong,timing\n";
  char line[256];
  for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 2) {
    for (Algorithm c : choices) {
      const double t = synthetic_time_us(c, bytes);
      if (t < 0) continue;
      std::snprintf(line, sizeof line, "allreduce,%s,cuda,2,%lld,%lld,f32,sum,%.6f,1,1,0,eager\n", algorithm_name(c),
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
  EXPECT_EQ(graph[0].second, Algorithm::Native);
  EXPECT_THROW(decide_from_sweep(csv, "sweep.csv", 3, BenchTiming::Eager, 1 << 20), Error);  // no row for 3 ranks
  EXPECT_THROW(decide_from_sweep(csv + "allreduce,ring,cuda,2,oops\n", "sweep.csv", 2, BenchTiming::Eager, 1 << 20),
               Error);
  EXPECT_THROW(decide_from_sweep(csv + "allreduce,ring,cuda,2,64,16,f32,sum,x,1,1,0,eager\n", "sweep.csv", 2,
                                 BenchTiming::Eager, 1 << 20),
               Error);
}

// Push rows in a sweep: push wins where it is fastest, but only up to the receive area this comm
// has (push_max_bytes), whatever sizes the sweep measured it at; one-shot takes over above.
TEST(AutoTableFile, AutoPushesOnlyUpToItsArea) {
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
  EXPECT_EQ(everywhere[0], std::make_pair(int64_t{1} << 20, Algorithm::Push));
  EXPECT_EQ(everywhere[1].second, Algorithm::Native);
  const auto small_area = decide_from_sweep(csv, "sweep.csv", 2, BenchTiming::Graph, int64_t{1} << 20, 32 << 10);
  ASSERT_EQ(small_area.size(), 3u);
  EXPECT_EQ(small_area[0], std::make_pair(int64_t{32} << 10, Algorithm::Push));
  EXPECT_EQ(small_area[1], std::make_pair(int64_t{1} << 20, Algorithm::OneShot));
  EXPECT_EQ(small_area[2].second, Algorithm::Native);
}

}  // namespace
}  // namespace nd::lab
