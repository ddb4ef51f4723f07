// The NCCL backend and the GPU ring under mpirun (one rank per GPU): ring against NCCL's own
// all-reduce and the closed form, through every GPU path (direct, one slice on one stream,
// many slices on two streams, one and two lanes); the halves alone; broadcast, split and
// grouped send/recv; collectives whose layouts differ between ranks raise on every rank, as
// they do on MPI, instead of hanging in NCCL; a bf16 ring and an f32 direct all-reduce captured
// together into a CUDA graph, as a tensor-parallel step does.
// Skips where there is no GPU, or fewer GPUs than ranks on the node.
#include <gtest/gtest.h>

#include <string>

#include "dist/comm/ring_allreduce.h"
#include "dist/comm/world.h"
#include "tests/common/captured_graph.h"
#include "tests/dist/collective_inputs.h"
#include "tests/dist/nccl_test_world.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rounding_tolerance;
using test::sum_over_ranks;

using test::enough_gpus;
using test::gpu_world;

void check_ring(const RingOptions& options, int64_t count, const char* path) {
  Comm& comm = gpu_world();
  const int n = comm.size();
  const uint64_t seed = 500 + count;
  std::vector<double> sum = sum_over_ranks(n, count, seed);
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      SCOPED_TRACE(std::string(path) + " " + dtype_name(dtype) + " " + reduce_op_name(op) + " count " +
                   std::to_string(count));
      Tensor ring = rank_input(comm.rank(), count, dtype, seed, comm.device());
      Tensor native = ring.clone();
      ring_allreduce(comm, ring, op, options);
      comm.allreduce(native, op);
      std::vector<double> want(sum);
      if (op == ReduceOp::Avg)
        for (double& v : want) v /= n;
      double rtol = rounding_tolerance(dtype);
      std::vector<double> got = ring.to_double_vector();
      EXPECT_EQ(count_mismatches(got, want, rtol, "ring vs closed form"), 0);
      // NCCL's average scales each input by 1/N before summing, so where the terms cancel its
      // result is rounding noise of the terms' size (|term| <= 8), not of the (zero) sum.
      double terms_atol = op == ReduceOp::Avg ? 2 * rtol * 8.0 : 1e-12;
      EXPECT_EQ(count_mismatches(got, native.to_double_vector(), 2 * rtol, "ring vs NCCL", terms_atol), 0);
    }
  }
}

TEST(NcclRing, DefaultOptionsMatchNcclAndClosedForm) {
  SKIP_WITHOUT_GPU();
  const int n = gpu_world().size();
  for (int64_t count : {int64_t{1}, int64_t(std::max(1, n - 1)), int64_t(n), int64_t{1000003}, int64_t{(4 << 20) + 3}})
    check_ring(RingOptions{}, count, "default");
}

TEST(NcclRing, OneSlicePerChunkOnOneStream) {
  SKIP_WITHOUT_GPU();
  RingOptions options;
  options.direct_max_bytes = 0;
  for (int64_t count : {int64_t{1}, int64_t{3}, int64_t{4099}}) check_ring(options, count, "ring, one slice");
}

TEST(NcclRing, ManySlicesOnTwoStreams) {
  SKIP_WITHOUT_GPU();
  RingOptions options;
  options.direct_max_bytes = 0;
  options.slice_bytes = 4096;  // dozens of slices per chunk: staging slots are reused many times
  check_ring(options, 300007, "ring, many slices");
}

TEST(NcclRing, OneLaneAndTwoLanes) {
  SKIP_WITHOUT_GPU();
  for (int lanes : {1, 2}) {
    RingOptions options;
    options.direct_max_bytes = 0;
    options.slice_bytes = 4096;
    options.lanes = lanes;
    check_ring(options, 100003, lanes == 1 ? "ring, one lane" : "ring, two lanes");
  }
}

// f32 slices of up to 3 MiB, two or more per lane part for 2..4 ranks, each over 160000
// 16-byte vectors: more than a reduction grid capped at half the SMs (66 blocks of 512 threads
// on an H200) covers in one pass of 4 vectors a thread, so its threads loop.
TEST(NcclRing, LargeSlicesOnCappedReductionGrid) {
  SKIP_WITHOUT_GPU();
  RingOptions options;
  options.slice_bytes = 3 << 20;
  check_ring(options, 12000007, "ring, large slices");
}

// The ring's two halves alone: reduce-scatter (with `options`) leaves each rank its own chunk
// summed over the ranks (in `scatter` dtype, seed `seed`); all-gather (with `gather_options`) fills
// every chunk from its owner (in `gather` dtype, seed `seed` + 1), the rest starting at -100.
void check_halves_alone(int64_t count, const RingOptions& options, const RingOptions& gather_options, DType scatter,
                        DType gather, int seed) {
  Comm& comm = gpu_world();
  const int n = comm.size(), r = comm.rank();
  Tensor buffer = rank_input(r, count, scatter, seed, comm.device());
  ring_reduce_scatter(comm, buffer, ReduceOp::Sum, options);
  RingChunk mine = ring_chunk(count, n, r);
  EXPECT_EQ(count_mismatches(buffer.narrow(mine.begin, mine.size).to_double_vector(),
                             sum_over_ranks(n, mine.size, seed, mine.begin), 0.0, "owned chunk"),
            0);
  Tensor gathered = Tensor::full({count}, -100.0, gather, comm.device());
  gathered.narrow(mine.begin, mine.size)
      .copy_from(rank_input(r, count, gather, seed + 1, comm.device()).narrow(mine.begin, mine.size));
  ring_all_gather(comm, gathered, gather_options);
  std::vector<double> want(count);
  for (int owner = 0; owner < n; ++owner) {
    RingChunk c = ring_chunk(count, n, owner);
    for (int64_t i = c.begin; i < c.begin + c.size; ++i) want[i] = test::rank_value(owner, i, seed + 1);
  }
  EXPECT_EQ(count_mismatches(gathered.to_double_vector(), want, 0.0, "gathered"), 0);
}

TEST(NcclRing, DirectPath) {
  SKIP_WITHOUT_GPU();
  RingOptions options;
  options.direct_max_bytes = 1 << 30;
  check_ring(options, 100003, "direct");
}

// What tensor parallelism does every step: a bf16 all-reduce through the staged ring, then a small
// f32 one through the direct path. After one eager round neither needs a new scratch buffer (so
// no host synchronisation), and the pair captures into a CUDA graph whose replays give the sums.
TEST(NcclRing, AlternatingDtypesCaptureIntoAGraph) {
  SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Comm& comm = gpu_world();
  const int n = comm.size(), r = comm.rank();
  const int64_t big = 300007, small = 1001;
  RingOptions staged;
  staged.direct_max_bytes = 0;
  staged.slice_bytes = 8192;
  Tensor a = rank_input(r, big, DType::BF16, 41, comm.device()), b = rank_input(r, small, DType::F32, 42, comm.device());
  auto both = [&] {
    ring_allreduce(comm, a, ReduceOp::Sum, staged);
    ring_allreduce(comm, b, ReduceOp::Sum);
  };
  both();  // eager: sets up the communicators and both scratch buffers
  synchronize_device_streams(comm.device().index);
  cudaStream_t stream = compute_stream(comm.device().index);
  test::CapturedGraph graph(stream, both);
  ASSERT_TRUE(graph.ok());
  for (int replay = 0; replay < 2; ++replay) {
    a.copy_from(rank_input(r, big, DType::BF16, 41));
    b.copy_from(rank_input(r, small, DType::F32, 42));
    ASSERT_TRUE(graph.replay());
    EXPECT_EQ(count_mismatches(a.to_double_vector(), sum_over_ranks(n, big, 41), rounding_tolerance(DType::BF16),
                               "bf16 ring in the graph"),
              0)
        << "replay " << replay;
    EXPECT_EQ(count_mismatches(b.to_double_vector(), sum_over_ranks(n, small, 42), rounding_tolerance(DType::F32),
                               "f32 direct in the graph"),
              0)
        << "replay " << replay;
  }
#endif
}

TEST(NcclRing, HalvesAlone) {
  SKIP_WITHOUT_GPU();
  RingOptions options;
  options.slice_bytes = 8192;
  check_halves_alone(200003, options, RingOptions{}, DType::F32, DType::BF16, 31);
}

TEST(NcclComm, GroupedSendRecvBroadcastAndSplit) {
  SKIP_WITHOUT_GPU();
  Comm& comm = gpu_world();
  const int n = comm.size(), r = comm.rank();
  Tensor out = rank_input(r, 1 << 20, DType::F32, 41, comm.device());
  Tensor in = Tensor::zeros({1 << 20}, DType::F32, comm.device());
  comm.group_start();
  comm.send(out, (r + 1) % n);
  comm.recv(in, (r - 1 + n) % n);
  comm.group_end();
  EXPECT_EQ(count_mismatches(in.to_double_vector(), rank_input((r - 1 + n) % n, 1 << 20, DType::F32, 41).to_double_vector(),
                             0.0, "received"),
            0);

  Tensor ints = Tensor::from_vector(std::vector<int32_t>{r, 7 * r}, {2}).to(comm.device());
  comm.broadcast(ints, n - 1);
  EXPECT_EQ(ints.to_double_vector(), (std::vector<double>{double(n - 1), 7.0 * (n - 1)}));

  auto half = comm.split(r % 2, r);
  Tensor ids = Tensor::full({3}, double(r), DType::F32, comm.device());
  half->allreduce(ids, ReduceOp::Sum);
  double want = 0;
  for (int q = r % 2; q < n; q += 2) want += q;
  EXPECT_EQ(ids.to_double_vector()[2], want);
  half->synchronize();
}

TEST(NcclRing, MismatchedCountsRaiseOnEveryRank) {
  SKIP_WITHOUT_GPU();
  Comm& comm = gpu_world();
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  Tensor buffer = Tensor::ones({comm.rank() == 0 ? 100 : 101}, DType::F32, comm.device());
  EXPECT_THROW(ring_allreduce(comm, buffer), Error);
}

TEST(NcclComm, MismatchedLayoutsRaiseOnEveryRank) {
  SKIP_WITHOUT_GPU();
  Comm& comm = gpu_world();
  if (comm.size() == 1) GTEST_SKIP() << "needs two ranks";
  const int n = comm.size(), r = comm.rank();
  const int64_t count = r == 0 ? 200 : 201;
  const Device gpu = comm.device();
  Tensor buffer = Tensor::ones({count}, DType::F32, gpu);
  EXPECT_THROW(comm.allreduce(buffer, ReduceOp::Sum), Error);
  Tensor typed = Tensor::ones({64}, r == 0 ? DType::F32 : DType::BF16, gpu);
  EXPECT_THROW(comm.allreduce(typed, ReduceOp::Sum), Error);
  Tensor same = Tensor::ones({64}, DType::F32, gpu);
  EXPECT_THROW(comm.allreduce(same, r == 0 ? ReduceOp::Sum : ReduceOp::Avg), Error);
  Tensor block = Tensor::ones({count}, DType::F32, gpu);
  Tensor blocks = Tensor::ones({n * count}, DType::F32, gpu);
  EXPECT_THROW(comm.reduce_scatter(blocks, block, ReduceOp::Sum), Error);
  EXPECT_THROW(comm.all_gather(block, blocks), Error);
  EXPECT_THROW(comm.broadcast(same, r == 0 ? 0 : 1), Error);
  // Nothing reached NCCL, so the comm is still usable; an agreed layout keeps working.
  for (int i = 0; i < 3; ++i) {
    Tensor fine = Tensor::ones({10}, DType::F32, gpu);
    comm.allreduce(fine, ReduceOp::Sum);
    EXPECT_EQ(fine.to_double_vector()[9], n);
  }
}

}  // namespace
}  // namespace nd::dist
