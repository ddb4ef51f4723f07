// The push one-shot all-reduce (Algorithm::Push: each rank stores its data into every peer's receive
// area with the flags inside the data words) under mpirun, one rank per GPU, one node: bit for bit
// the host's f32 sum in rank order (random non-integer inputs, f32 and bf16, sum and average) at
// counts around its 256-line chunks (odd counts end inside a line); sizes that shrink and grow in a
// row with the ranks skewed on the host (a slot's stale lines must never pass for fresh); push
// between one-shot and two-shot calls on one comm; a CUDA graph of pushes replayed between eager
// calls; sizes above its area go to NCCL. Skips where there is no GPU per rank.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "dist/comm/peer_comm.h"
#include "tensor/philox.h"
#include "tests/common/captured_graph.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

using test::gpu_world;

PeerOptions push_options(int64_t push_max_bytes = int64_t{1} << 20) {
  PeerOptions options;
  options.mode = Algorithm::Push;
  options.buffer_bytes = int64_t{4} << 20;
  options.push_max_bytes = push_max_bytes;
  options.timeout_s = 20;
  return options;
}

// Rank r's input: uniform in [-1, 1), rounded to `dtype` (so sums round, unlike integer inputs).
Tensor random_input(int rank, int64_t count, DType dtype, uint64_t seed) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = 2.0f * philox_uniform(seed, static_cast<uint64_t>(i), static_cast<uint64_t>(rank)) - 1.0f;
  return Tensor::from_vector(values, {count}, dtype);
}

// The kernel's sum on the host: f32 accumulation in rank order from 0, times the scale, rounded
// once to `dtype` (exact IEEE f32 arithmetic on both sides, so the bits must match).
std::vector<double> rank_order_sum(int nranks, int64_t count, DType dtype, uint64_t seed, ReduceOp op) {
  std::vector<float> acc(count, 0.0f);
  for (int q = 0; q < nranks; ++q) {
    const std::vector<double> x = random_input(q, count, dtype, seed).to_double_vector();
    for (int64_t i = 0; i < count; ++i) acc[i] += static_cast<float>(x[i]);
  }
  const float scale = op == ReduceOp::Avg ? 1.0f / static_cast<float>(nranks) : 1.0f;
  for (float& a : acc) a *= scale;
  return Tensor::from_vector(acc, {count}, dtype).to_double_vector();
}

void expect_bits(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const std::vector<double> values = got.to_double_vector();
  ASSERT_EQ(values.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == want[i]) continue;
    if (wrong < 5) ADD_FAILURE() << what << ": element " << i << " is " << values[i] << ", expected " << want[i];
    ++wrong;
  }
  EXPECT_EQ(wrong, 0) << what;
}

// Around the chunk (256 lines of 8 bytes: 512 f32, 1024 bf16) and line (2 f32, 4 bf16) edges, to
// the 1 MB area (262144 f32).
const std::vector<int64_t> kCounts = {1,    2,    3,    4,    5,     7,     9,      255,    256,   511,
                                      512,  513,  1023, 1024, 1025,  4097,  65537,  131071, 262143, 262144};

TEST(PeerPushNccl, EveryCountIsTheRankOrderSumBitForBit) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, push_options());
  if (r == 0 && !peer.peer_usable()) std::printf("no peer memory here: %s\n", peer.unusable_reason().c_str());
  for (DType dtype : {DType::F32, DType::BF16})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
      for (int64_t count : kCounts) {
        const uint64_t seed = 500 + count % 89;
        const std::string what = std::string(dtype_name(dtype)) + " " + reduce_op_name(op) + " count " +
                                 std::to_string(count);
        SCOPED_TRACE(what);
        if (peer.peer_usable()) {
          EXPECT_EQ(peer.choice(count * dtype_size(dtype)), Algorithm::Push);
        }
        Tensor a = random_input(r, count, dtype, seed).to(world.device());
        peer.allreduce(a, op);
        if (peer.peer_usable()) {
          expect_bits(a, rank_order_sum(n, count, dtype, seed, op), what);
        } else {  // NCCL's sum: another order, so only close
          const std::vector<double> want = rank_order_sum(n, count, dtype, seed, op);
          EXPECT_EQ(test::count_mismatches(a.to_double_vector(), want, 4 * test::rounding_tolerance(dtype),
                                           what.c_str(), 1e-5),
                    0);
        }
      }
}

// 240 calls without a host wait between them, the sizes shrinking and growing so that the chunks
// a call touches change from call to call, and each rank pausing on the host at other calls (its
// kernels then start late or early against the others'). Integer inputs: exact closed form.
TEST(PeerPushNccl, ShrinkingAndGrowingCallsInARowStayApart) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, push_options());
  const std::vector<int64_t> cycle = {1, 700, 3, 70001, 2, 513, 262143, 9, 1025, 257};
  std::vector<Tensor> buffers;
  for (int k = 0; k < 240; ++k)
    buffers.push_back(test::rank_input(r, cycle[k % cycle.size()], DType::F32, 900 + k, world.device()));
  // The first call of each size agrees on its layout on the host: done here, outside the row.
  for (size_t i = 0; i < cycle.size(); ++i) {
    Tensor warm = test::rank_input(r, cycle[i], DType::F32, 1, world.device());
    peer.allreduce(warm, ReduceOp::Sum);
  }
  world.synchronize();
  for (int k = 0; k < 240; ++k) {
    if ((k + 3 * r) % 7 == 0) usleep(static_cast<useconds_t>(50 + 30 * r));
    peer.allreduce_async(buffers[k], ReduceOp::Sum).wait();
  }
  for (int k = 0; k < 240; ++k) {
    const int64_t count = cycle[k % cycle.size()];
    const std::string what = "call " + std::to_string(k) + " count " + std::to_string(count);
    EXPECT_EQ(test::count_mismatches(buffers[k].to_double_vector(), test::sum_over_ranks(n, count, 900 + k), 0,
                                     what.c_str()),
              0);
  }
}

// Push, one-shot and two-shot share the registered region (each its own part): calls of all
// three in a row on one comm, no host wait between them.
TEST(PeerPushNccl, PushBetweenOneShotAndTwoShot) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, push_options());
  const Algorithm order[] = {Algorithm::Push, Algorithm::OneShot, Algorithm::Push,
                                   Algorithm::TwoShot};
  std::vector<Tensor> buffers;
  for (int k = 0; k < 60; ++k) buffers.push_back(test::rank_input(r, 3001 + 2 * (k % 3), DType::BF16, 40 + k, world.device()));
  for (int k = 0; k < 60; ++k) peer.allreduce_with(order[k % 4], buffers[k], ReduceOp::Sum).wait();
  for (int k = 0; k < 60; ++k) {
    const std::string what = std::string(algorithm_name(order[k % 4])) + " call " + std::to_string(k);
    EXPECT_EQ(test::count_mismatches(buffers[k].to_double_vector(), test::sum_over_ranks(n, 3001 + 2 * (k % 3), 40 + k),
                                     0, what.c_str()),
              0);
  }
}

// A captured step of pushes (the chunks' epochs advance on the device) replayed five times, an
// eager push between replays.
TEST(PeerPushNccl, GraphReplaysGiveTheRankOrderSum) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, push_options());
  const Device gpu = world.device();
  struct Call {
    int64_t count;
    DType dtype;
    ReduceOp op;
  };
  const std::vector<Call> calls = {{1, DType::F32, ReduceOp::Sum},
                                   {1001, DType::F32, ReduceOp::Sum},
                                   {5003, DType::BF16, ReduceOp::Avg},
                                   {200001, DType::F32, ReduceOp::Avg}};
  std::vector<Tensor> buffers;
  for (size_t i = 0; i < calls.size(); ++i)
    buffers.push_back(random_input(r, calls[i].count, calls[i].dtype, 60 + i).to(gpu));
  auto step = [&] {
    for (size_t i = 0; i < calls.size(); ++i) peer.allreduce(buffers[i], calls[i].op);
  };
  step();  // eager: the layout agreements happen here, outside the capture
  Tensor between = test::rank_input(r, 777, DType::F32, 70, gpu);
  peer.allreduce(between, ReduceOp::Sum);
  world.synchronize();
  cudaStream_t stream = compute_stream(gpu.index);
  test::CapturedGraph graph(stream, step);
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 5; ++replay) {
    for (size_t i = 0; i < calls.size(); ++i) buffers[i].copy_from(random_input(r, calls[i].count, calls[i].dtype, 60 + i));
    ASSERT_TRUE(graph.replay());
    for (size_t i = 0; i < calls.size(); ++i)
      expect_bits(buffers[i], rank_order_sum(n, calls[i].count, calls[i].dtype, 60 + i, calls[i].op),
                  "replay " + std::to_string(replay) + " call " + std::to_string(i));
    between.copy_from(test::rank_input(r, 777, DType::F32, 70 + replay));
    peer.allreduce(between, ReduceOp::Sum);
    EXPECT_EQ(test::count_mismatches(between.to_double_vector(), test::sum_over_ranks(n, 777, 70 + replay), 0,
                                     "eager push between replays"),
              0);
  }
#endif
}

// Above the receive area (here 4 KB), and with no area at all, a push is NCCL's call.
TEST(PeerPushNccl, AboveTheAreaGoesToNccl) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  for (int64_t area : {int64_t{4096}, int64_t{0}}) {
    PeerComm peer(world, push_options(area));
    if (peer.peer_usable()) {
      EXPECT_EQ(peer.largest_bytes(Algorithm::Push), area);
    }
    for (int64_t count : {int64_t{1024}, int64_t{1025}, int64_t{100000}}) {
      const std::string what = "area " + std::to_string(area) + " count " + std::to_string(count);
      Tensor a = test::rank_input(r, count, DType::F32, 80, world.device());
      peer.allreduce(a, ReduceOp::Sum);
      EXPECT_EQ(test::count_mismatches(a.to_double_vector(), test::sum_over_ranks(n, count, 80), 0, what.c_str()), 0);
    }
  }
}

}  // namespace
}  // namespace nd::dist
