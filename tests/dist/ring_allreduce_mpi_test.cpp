// The from-scratch ring on the MPI backend (run under mpirun -np 2, 3, 4): it must equal the
// native MPI all-reduce and the closed-form sum, for awkward counts, f32 and bf16, sum and avg;
// the reduce-scatter and all-gather halves alone; size mismatches must raise, not hang; and the
// layout agreement behind that check runs once per layout, not once per call.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "dist/comm/forwarding_comm.h"
#include "dist/comm/ring_allreduce.h"
#include "dist/comm/world.h"
#include "tensor/random.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rounding_tolerance;
using test::sum_over_ranks;

std::vector<double> expected_result(const std::vector<double>& sum, ReduceOp op, int nranks) {
  std::vector<double> out(sum);
  if (op == ReduceOp::Avg)
    for (double& v : out) v /= nranks;
  return out;
}

// Ring against native and against the closed form, for one count, every dtype and op.
void check_ring_matches(Comm& comm, int64_t count, const RingOptions& options) {
  const uint64_t seed = 1000 + count;
  const int n = comm.size();
  std::vector<double> sum = sum_over_ranks(n, count, seed);
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduce_op_name(op) + " count " + std::to_string(count));
      Tensor ring = rank_input(comm.rank(), count, dtype, seed);
      Tensor native = ring.clone();
      ring_allreduce(comm, ring, op, options);
      comm.allreduce(native, op);
      std::vector<double> got = ring.to_double_vector();
      // Sums of small integers are exact and the average is one rounding of the same sum on
      // both paths, so ring and native agree exactly.
      EXPECT_EQ(count_mismatches(got, native.to_double_vector(), 0.0, "ring vs native"), 0);
      EXPECT_EQ(count_mismatches(got, expected_result(sum, op, n), rounding_tolerance(dtype), "ring vs closed form"), 0);
    }
  }
}

TEST(RingAllreduce, MatchesNativeForAwkwardCounts) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size();
  for (int64_t count : {int64_t{1}, int64_t(std::max(1, n - 1)), int64_t(n), int64_t{1000003}})
    check_ring_matches(*comm, count, RingOptions{});
}

TEST(RingAllreduce, ManySmallSlicesPipeline) {
  auto comm = make_world_comm(Device::cpu());
  RingOptions options;
  options.slice_bytes = 64;  // 16 f32 or 32 bf16 per slice: hundreds of pipelined steps
  check_ring_matches(*comm, 10007, options);
}

TEST(RingAllreduce, DirectPathForSmallBuffers) {
  auto comm = make_world_comm(Device::cpu());
  RingOptions options;
  options.direct_max_bytes = 1 << 20;
  check_ring_matches(*comm, 3001, options);
}

TEST(RingAllreduce, RandomFloatsAgreeWithNative) {
  auto comm = make_world_comm(Device::cpu());
  Generator gen(77, comm->rank());
  Tensor ring = Tensor::randn({317, 331}, gen);
  Tensor native = ring.clone();
  ring_allreduce(*comm, ring, ReduceOp::Avg);
  comm->allreduce(native, ReduceOp::Avg);
  // Summation order differs between the ring and MPI: a few f32 roundings apart.
  std::vector<double> got = ring.to_double_vector(), want = native.to_double_vector();
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += std::fabs(got[i] - want[i]) > 1e-5 + 1e-5 * std::fabs(want[i]);
  EXPECT_EQ(wrong, 0);
}

TEST(RingAllreduce, ReduceScatterAloneLeavesEachRankItsChunk) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size(), r = comm->rank();
  const int64_t count = 100003;
  RingOptions options;
  options.slice_bytes = 4096;
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor buffer = rank_input(r, count, dtype, 5);
    ring_reduce_scatter(*comm, buffer, ReduceOp::Sum, options);
    RingChunk mine = ring_chunk(count, n, r);
    std::vector<double> want = sum_over_ranks(n, mine.size, 5, mine.begin);
    EXPECT_EQ(count_mismatches(buffer.narrow(mine.begin, mine.size).to_double_vector(), want, 0.0, "owned chunk"), 0);
  }
}

TEST(RingAllreduce, AllGatherAloneSpreadsEveryChunk) {
  auto comm = make_world_comm(Device::cpu());
  const int n = comm->size(), r = comm->rank();
  const int64_t count = 77777;
  Tensor buffer = Tensor::full({count}, -100.0);  // chunks of other ranks: filled by the gather
  RingChunk mine = ring_chunk(count, n, r);
  buffer.narrow(mine.begin, mine.size).copy_from(test::rank_input(r, count, DType::F32, 9).narrow(mine.begin, mine.size));
  ring_all_gather(*comm, buffer);
  std::vector<double> want(count);
  for (int owner = 0; owner < n; ++owner) {
    RingChunk c = ring_chunk(count, n, owner);
    for (int64_t i = c.begin; i < c.begin + c.size; ++i) want[i] = test::rank_value(owner, i, 9);
  }
  EXPECT_EQ(count_mismatches(buffer.to_double_vector(), want, 0.0, "gathered buffer"), 0);
}

TEST(RingAllreduce, MismatchedCountsRaiseOnEveryRank) {
  auto comm = make_world_comm(Device::cpu());
  if (comm->size() == 1) GTEST_SKIP() << "needs two ranks";
  Tensor buffer = Tensor::ones({comm->rank() == 0 ? 1000 : 1001});
  EXPECT_THROW(ring_allreduce(*comm, buffer), Error);
  EXPECT_THROW(comm->allreduce(buffer, ReduceOp::Sum), Error);
  Tensor typed = Tensor::ones({64}, comm->rank() == 0 ? DType::F32 : DType::BF16);
  EXPECT_THROW(ring_allreduce(*comm, typed), Error);
  // The comm is still usable afterwards.
  Tensor fine = Tensor::ones({10});
  ring_allreduce(*comm, fine);
  EXPECT_EQ(fine.to_double_vector()[9], comm->size());
}

// Forwards everything to an MPI comm and counts the host all-reduces, which is what the ring's
// layout agreement costs.
class CountingComm : public ForwardingComm {
 public:
  explicit CountingComm(Comm& inner) : ForwardingComm(inner) {}
  int host_allreduces = 0;

  void host_allreduce(int64_t* values, int n, HostReduce op) override {
    ++host_allreduces;
    inner_.host_allreduce(values, n, op);
  }
  void host_allreduce(double* values, int n, HostReduce op) override {
    ++host_allreduces;
    inner_.host_allreduce(values, n, op);
  }
};

TEST(RingAllreduce, LayoutAgreementRunsOncePerLayout) {
  auto world = make_world_comm(Device::cpu());
  if (world->size() == 1) GTEST_SKIP() << "needs two ranks";
  CountingComm comm(*world);
  const int n = comm.size();
  for (int call = 0; call < 3; ++call) {
    Tensor buffer = Tensor::ones({1000});
    ring_allreduce(comm, buffer);
    EXPECT_EQ(buffer.to_double_vector()[999], n);
  }
  EXPECT_EQ(comm.host_allreduces, 1);
  Tensor other_count = Tensor::ones({1001});
  ring_allreduce(comm, other_count);
  Tensor other_op = Tensor::ones({1000});
  ring_allreduce(comm, other_op, ReduceOp::Avg);
  EXPECT_EQ(other_op.to_double_vector()[0], 1.0);
  EXPECT_EQ(comm.host_allreduces, 3);
  ring_allreduce(comm, other_count);
  ring_all_gather(comm, other_count);
  EXPECT_EQ(comm.host_allreduces, 4);
}

TEST(RingAllreduce, RejectsBadBuffers) {
  auto comm = make_world_comm(Device::cpu());
  Tensor ints = Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {3});
  EXPECT_THROW(ring_allreduce(*comm, ints), Error);
  Tensor undefined;
  EXPECT_THROW(ring_allreduce(*comm, undefined), Error);
}

}  // namespace
}  // namespace nd::dist
