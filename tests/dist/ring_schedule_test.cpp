// The pipelined ring's schedule (ring_transfer in dist/comm/ring_schedule.h), which the GPU driver
// follows, checked without a GPU: the pieces of all chunks, lanes and pipes tile the buffer once;
// at every step each send meets the matching receive (same positions) on the rank it names; and
// N simulated ranks that run the schedule, with every pipe in step or each pipe alone in turn,
// end with the closed-form sum everywhere.
#include <gtest/gtest.h>

#include <vector>

#include "dist/comm/ring_schedule.h"

namespace nd::dist::ring {
namespace {

using Buffers = std::vector<std::vector<double>>;  // (rank, element)

// Rank r's input: small integers, so every sum is exact.
Buffers inputs(int n, int64_t count) {
  Buffers b(n, std::vector<double>(count));
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) b[r][i] = static_cast<double>((i * 7 + r * 13) % 17) - 8.0;
  return b;
}

// One step of one pipe on every rank at once: each rank receives from the rank its transfer
// names, what that rank sends at the same (step, pipe, lane), and adds it in or writes it over.
void run_step(Buffers& b, int64_t count, int step, int lanes, int pipes, int pipe) {
  const int n = static_cast<int>(b.size());
  const Buffers before = b;
  for (int r = 0; r < n; ++r) {
    for (int lane = 0; lane < lanes; ++lane) {
      RingTransfer t = ring_transfer(count, r, n, step, lanes, lane, pipes, pipe);
      RingTransfer from = ring_transfer(count, t.recv_from, n, step, lanes, lane, pipes, pipe);
      ASSERT_EQ(from.send_to, r);
      ASSERT_EQ(from.send.begin, t.recv.begin);
      ASSERT_EQ(from.send.size, t.recv.size);
      ASSERT_EQ(t.reduce, step < n - 1);
      for (int64_t i = t.recv.begin; i < t.recv.begin + t.recv.size; ++i)
        b[r][i] = (t.reduce ? b[r][i] : 0.0) + before[t.recv_from][i];
    }
  }
}

void expect_sum_everywhere(const Buffers& b, int64_t count) {
  const int n = static_cast<int>(b.size());
  const Buffers in = inputs(n, count);
  int64_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      double want = 0;
      for (int q = 0; q < n; ++q) want += in[q][i];
      if (b[r][i] != want && wrong++ < 5) ADD_FAILURE() << "rank " << r << " element " << i << ": " << b[r][i] << " != " << want;
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(RingSchedule, PiecesTileTheBuffer) {
  for (int n : {2, 3, 4, 5})
    for (int lanes : {1, 2})
      for (int pipes : {1, 2, 3, 8})
        for (int64_t count : {int64_t{1}, int64_t(n - 1), int64_t(n), int64_t{29}, int64_t{1003}}) {
          SCOPED_TRACE("n " + std::to_string(n) + " lanes " + std::to_string(lanes) + " pipes " +
                       std::to_string(pipes) + " count " + std::to_string(count));
          std::vector<int> covered(count, 0);
          // At the first reduce-scatter step every rank receives one piece per (lane, pipe); over
          // the ranks that is every chunk once per (lane, pipe).
          for (int r = 0; r < n; ++r)
            for (int lane = 0; lane < lanes; ++lane)
              for (int pipe = 0; pipe < pipes; ++pipe) {
                RingTransfer t = ring_transfer(count, r, n, 0, lanes, lane, pipes, pipe);
                ASSERT_GE(t.recv.size, 0);
                for (int64_t i = t.recv.begin; i < t.recv.begin + t.recv.size; ++i) ++covered[i];
              }
          for (int64_t i = 0; i < count; ++i) ASSERT_EQ(covered[i], 1) << "element " << i;
        }
}

TEST(RingSchedule, PipesInStepEndWithTheSum) {
  for (int n : {2, 3, 4, 5})
    for (int lanes : {1, 2})
      for (int pipes : {1, 2, 3})
        for (int64_t count : {int64_t{1}, int64_t(n), int64_t{37}, int64_t{1001}}) {
          SCOPED_TRACE("n " + std::to_string(n) + " lanes " + std::to_string(lanes) + " pipes " +
                       std::to_string(pipes) + " count " + std::to_string(count));
          Buffers b = inputs(n, count);
          for (int step = 0; step < 2 * (n - 1); ++step)
            for (int pipe = 0; pipe < pipes; ++pipe) run_step(b, count, step, lanes, pipes, pipe);
          expect_sum_everywhere(b, count);
        }
}

// The pipes are not ordered between themselves on the GPU: one may finish before another
// starts. The result must not depend on it.
TEST(RingSchedule, EachPipeAloneInTurnEndsWithTheSum) {
  for (int n : {3, 4})
    for (int pipes : {2, 4}) {
      const int64_t count = 1000 + n;
      Buffers b = inputs(n, count);
      for (int pipe = pipes - 1; pipe >= 0; --pipe)
        for (int step = 0; step < 2 * (n - 1); ++step) run_step(b, count, step, 2, pipes, pipe);
      expect_sum_everywhere(b, count);
    }
}

// After the reduce-scatter half alone, rank r holds the finished chunk r: what ring_reduce_scatter
// promises, whichever pipes cut it.
TEST(RingSchedule, ReduceScatterHalfFinishesTheOwnChunk) {
  const int n = 4, pipes = 3, lanes = 2;
  const int64_t count = 4099;
  Buffers b = inputs(n, count);
  for (int step = 0; step < n - 1; ++step)
    for (int pipe = 0; pipe < pipes; ++pipe) run_step(b, count, step, lanes, pipes, pipe);
  const Buffers in = inputs(n, count);
  for (int r = 0; r < n; ++r) {
    RingChunk mine = ring_chunk(count, n, r);
    for (int64_t i = mine.begin; i < mine.begin + mine.size; ++i)
      ASSERT_EQ(b[r][i], in[0][i] + in[1][i] + in[2][i] + in[3][i]) << "rank " << r << " element " << i;
  }
}

}  // namespace
}  // namespace nd::dist::ring
