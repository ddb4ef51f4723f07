// The peer-memory all-reduce on NCCL under mpirun (one rank per GPU, one node): one-shot,
// two-shot, peer (by size), auto and push (tests/dist/peer_push_nccl_mpi_test.cpp has its own) against the closed form and NCCL at sizes from 1 element to
// the registered buffer (odd counts leave a tail past the 16-byte packs), f32 and bf16, sum and
// average, many calls in a row (the flags' epochs advance); a CUDA graph of several all-reduces
// replayed several times (epochs advance on the device); Max, sizes above the buffer and
// unaligned views go to NCCL; a grid asked for peer hands PeerComms to its groups. Skips where
// there is no GPU per rank; reports (and the sums still hold) where the GPUs share no peer memory.
#include <gtest/gtest.h>

#include <string>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/bench/auto_choice.h"
#include "dist/comm/peer_comm.h"
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
using test::rank_input;
using test::sum_over_ranks;

void expect_reduced(const Tensor& got, int n, int64_t count, uint64_t seed, DType dtype, ReduceOp op,
                    const std::string& what) {
  test::expect_reduced_near(got, test::reduced_over_ranks(n, count, seed, op), dtype, op, what);
}

PeerOptions small_buffer(Algorithm mode) {
  PeerOptions options;
  options.mode = mode;
  options.buffer_bytes = int64_t{4} << 20;
  options.one_shot_max_bytes = int64_t{64} << 10;
  options.timeout_s = 20;
  if (mode == Algorithm::Auto) options.decide = auto_decider();  // the choices timed at start
  return options;
}

const std::vector<int64_t> kCounts = {1, 2, 3, 4, 7, 8, 9, 31, 1000, 4097, 65536, 100003, 262144, 1048575};

TEST(PeerCommNccl, EveryModeGivesTheClosedForm) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  for (Algorithm mode : {Algorithm::OneShot, Algorithm::TwoShot, Algorithm::Peer, Algorithm::Auto, Algorithm::Push}) {
    PeerComm peer(world, small_buffer(mode));
    if (r == 0 && !peer.peer_usable()) std::printf("no peer memory here: %s\n", peer.unusable_reason().c_str());
    for (DType dtype : {DType::F32, DType::BF16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
        for (int64_t count : kCounts) {
          if (count * static_cast<int64_t>(dtype_size(dtype)) > (int64_t{4} << 20)) continue;
          const uint64_t seed = 300 + count % 97;
          const std::string what = std::string(algorithm_name(mode)) + " " + dtype_name(dtype) + " " +
                                   reduce_op_name(op) + " count " + std::to_string(count);
          SCOPED_TRACE(what);
          Tensor a = rank_input(r, count, dtype, seed, world.device());
          peer.allreduce(a, op);
          expect_reduced(a, n, count, seed, dtype, op, what);
        }
  }
}

// Many calls back to back without a host wait between them: the flags of call k must never be
// taken for those of call k + 1, nor a rank's copy-in overwrite a buffer a peer still reads.
TEST(PeerCommNccl, CallsInARowStayApart) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  for (Algorithm mode : {Algorithm::OneShot, Algorithm::TwoShot, Algorithm::Push}) {
    PeerComm peer(world, small_buffer(mode));
    std::vector<Tensor> buffers;
    for (int k = 0; k < 200; ++k) buffers.push_back(rank_input(r, 1000 + 37 * (k % 5), DType::F32, 700 + k, world.device()));
    for (Tensor& b : buffers) peer.allreduce_async(b, ReduceOp::Sum).wait();
    for (int k = 0; k < 200; ++k)
      expect_reduced(buffers[k], n, 1000 + 37 * (k % 5), 700 + k, DType::F32, ReduceOp::Sum,
                     std::string(algorithm_name(mode)) + " call " + std::to_string(k));
  }
}

TEST(PeerCommNccl, GraphReplaysGiveTheClosedForm) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, small_buffer(Algorithm::Peer));
  const Device gpu = world.device();
  // One-shot (small), two-shot (large) and a bf16 average, as a tp step would issue them.
  const std::vector<std::pair<int64_t, DType>> shapes = {{1001, DType::F32}, {300001, DType::F32}, {5003, DType::BF16}};
  std::vector<Tensor> buffers;
  for (size_t i = 0; i < shapes.size(); ++i) buffers.push_back(rank_input(r, shapes[i].first, shapes[i].second, 80 + i, gpu));
  auto step = [&] {
    for (size_t i = 0; i < buffers.size(); ++i) peer.allreduce(buffers[i], i == 2 ? ReduceOp::Avg : ReduceOp::Sum);
  };
  step();  // eager: the layout agreements happen here, outside the capture
  world.synchronize();
  cudaStream_t stream = compute_stream(gpu.index);
  test::CapturedGraph graph(stream, step);
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 5; ++replay) {
    for (size_t i = 0; i < shapes.size(); ++i)
      buffers[i].copy_from(rank_input(r, shapes[i].first, shapes[i].second, 80 + i));
    ASSERT_TRUE(graph.replay());
    for (size_t i = 0; i < shapes.size(); ++i)
      expect_reduced(buffers[i], n, shapes[i].first, 80 + i, shapes[i].second, i == 2 ? ReduceOp::Avg : ReduceOp::Sum,
                     "replay " + std::to_string(replay) + " buffer " + std::to_string(i));
  }
#endif
}

TEST(PeerCommNccl, FailsOverToNccl) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  PeerComm peer(world, small_buffer(Algorithm::OneShot));
  // Above the 4 MB buffer.
  Tensor large = rank_input(r, (int64_t{4} << 20) / 4 + 5, DType::F32, 90, world.device());
  peer.allreduce(large, ReduceOp::Sum);
  expect_reduced(large, n, large.numel(), 90, DType::F32, ReduceOp::Sum, "above the buffer");
  // A view 4 bytes into a buffer: not 16-byte aligned.
  Tensor whole = rank_input(r, 1001, DType::F32, 91, world.device());
  Tensor view = whole.narrow(1, 1000);
  peer.allreduce(view, ReduceOp::Sum);
  std::vector<double> want = sum_over_ranks(n, 1001, 91);
  std::vector<double> got = whole.to_double_vector();
  for (int64_t i = 1; i < 1001; ++i) EXPECT_EQ(got[i], want[i]) << "unaligned view, element " << i;
  // Max: NCCL's.
  Tensor m = Tensor::full({17}, static_cast<double>(r), DType::F32, world.device());
  peer.allreduce(m, ReduceOp::Max);
  EXPECT_EQ(m.to_double_vector(), std::vector<double>(17, n - 1.0));
}

TEST(PeerCommNccl, GridHandsOutPeerComms) {
  SKIP_WITHOUT_GPU();
  Comm& world = gpu_world();
  const int n = world.size(), r = world.rank();
  for (Algorithm kind : {Algorithm::Peer, Algorithm::Auto}) {
    GridOptions options;
    options.tp = n;
    options.collectives = kind;
    ParallelGrid grid(world, options);
    EXPECT_NE(dynamic_cast<PeerComm*>(&grid.tp()), nullptr);
    Tensor values = rank_input(r, 70001, DType::F32, 95, world.device());
    grid.tp().allreduce(values, ReduceOp::Sum);
    expect_reduced(values, n, 70001, 95, DType::F32, ReduceOp::Sum, algorithm_name(kind));
  }
}

}  // namespace
}  // namespace nd::dist
