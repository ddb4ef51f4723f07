// The ring decorator under mpirun -np 2, 3, 4 (MPI, CPU): its all-reduce, reduce-scatter and
// all-gather give what the wrapped comm's native ones give and the closed form (rank-dependent
// integer inputs), for sum, average and max, f32 and bf16 (all-gather also i32), over block sizes
// from 0 to larger than one ring slice; the reduce-scatter leaves its input untouched; a split is
// decorated too; everything else is delegated.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dist/comm/ring_comm.h"
#include "dist/comm/world.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/dist/collective_inputs.h"

namespace nd::dist {
namespace {

using test::count_mismatches;
using test::rank_input;
using test::rank_value;
using test::rounding_tolerance;

// Element i of the reduction over every rank of the world.
std::vector<double> reduced(ReduceOp op, int n, int64_t count, uint64_t seed, int64_t begin = 0) {
  std::vector<double> out(count, op == ReduceOp::Max ? -1e9 : 0.0);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < count; ++i) {
      const double v = rank_value(r, begin + i, seed);
      out[i] = op == ReduceOp::Max ? std::max(out[i], v) : out[i] + v;
    }
  if (op == ReduceOp::Avg)
    for (double& v : out) v /= n;
  return out;
}

// Small slices, so that the larger blocks run the pipelined CPU ring (several slices per chunk).
RingOptions small_slices() {
  RingOptions options;
  options.slice_bytes = 64;
  return options;
}

const std::vector<int64_t> kBlocks = {0, 1, 7, 100, 1001};

TEST(RingComm, AllReduceEqualsNative) {
  Comm& native = test::mpi_world();
  RingComm ring(native, small_slices());
  const int n = native.size(), r = native.rank();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max})
    for (DType dtype : {DType::F32, DType::BF16})
      for (int64_t count : kBlocks) {
        SCOPED_TRACE(std::string(reduce_op_name(op)) + " " + dtype_name(dtype) + " count " + std::to_string(count));
        if (op == ReduceOp::Max && dtype == DType::BF16) continue;  // max: f32 only on the backends
        Tensor a = rank_input(r, count, dtype, 11), b = rank_input(r, count, dtype, 11);
        ring.allreduce(a, op);
        native.allreduce(b, op);
        EXPECT_EQ(a.to_double_vector(), b.to_double_vector());
        EXPECT_EQ(count_mismatches(a.to_double_vector(), reduced(op, n, count, 11), rounding_tolerance(dtype), "ring"), 0);
      }
}

TEST(RingComm, ReduceScatterEqualsNativeAndLeavesItsInput) {
  Comm& native = test::mpi_world();
  RingComm ring(native, small_slices());
  const int n = native.size(), r = native.rank();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max})
    for (DType dtype : {DType::F32, DType::BF16})
      for (int64_t block : kBlocks) {
        SCOPED_TRACE(std::string(reduce_op_name(op)) + " " + dtype_name(dtype) + " block " + std::to_string(block));
        if (op == ReduceOp::Max && dtype == DType::BF16) continue;
        const Tensor input = rank_input(r, block * n, dtype, 12);
        const std::vector<double> before = input.to_double_vector();
        Tensor got = Tensor::zeros({block}, dtype), want = Tensor::zeros({block}, dtype);
        ring.reduce_scatter(input, got, op);
        native.reduce_scatter(input, want, op);
        EXPECT_EQ(input.to_double_vector(), before) << "the input changed";
        EXPECT_EQ(got.to_double_vector(), want.to_double_vector());
        EXPECT_EQ(count_mismatches(got.to_double_vector(), reduced(op, n, block, 12, r * block),
                                   rounding_tolerance(dtype), "block"),
                  0);
      }
  // Wrong shapes are errors, as on the native comm.
  Tensor input = Tensor::zeros({3 * n + 1}), output = Tensor::zeros({3});
  EXPECT_THROW(ring.reduce_scatter(input, output, ReduceOp::Sum), Error);
}

TEST(RingComm, AllGatherEqualsNative) {
  Comm& native = test::mpi_world();
  RingComm ring(native, small_slices());
  const int n = native.size(), r = native.rank();
  for (DType dtype : {DType::F32, DType::BF16, DType::I32})
    for (int64_t block : kBlocks) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " block " + std::to_string(block));
      Tensor input = rank_input(r, block, dtype == DType::I32 ? DType::F32 : dtype, 13);
      if (dtype == DType::I32) {
        std::vector<int32_t> ints(block);
        for (int64_t i = 0; i < block; ++i) ints[i] = static_cast<int32_t>(rank_value(r, i, 13));
        input = Tensor::from_vector(ints, {block});
      }
      Tensor got = Tensor::full({block * n}, -99.0, dtype), want = Tensor::zeros({block * n}, dtype);
      ring.all_gather(input, got);
      native.all_gather(input, want);
      EXPECT_EQ(got.to_double_vector(), want.to_double_vector());
      std::vector<double> concatenated;
      for (int q = 0; q < n; ++q)
        for (int64_t i = 0; i < block; ++i) concatenated.push_back(rank_value(q, i, 13));
      EXPECT_EQ(got.to_double_vector(), concatenated);
    }
}

// A split of the decorator is decorated (and sums over its own members); broadcast, barrier and
// host values pass through.
TEST(RingComm, SplitIsDecoratedAndTheRestDelegated) {
  Comm& native = test::mpi_world();
  RingComm ring(native);
  const int n = native.size(), r = native.rank();
  std::unique_ptr<Comm> half = ring.split(r % 2, r);
  ASSERT_NE(dynamic_cast<RingComm*>(half.get()), nullptr);
  EXPECT_STREQ(half->backend(), native.backend());
  Tensor values = rank_input(r, 333, DType::F32, 14);
  half->allreduce(values, ReduceOp::Sum);
  std::vector<double> want(333, 0.0);
  for (int q = r % 2; q < n; q += 2)
    for (int64_t i = 0; i < 333; ++i) want[i] += rank_value(q, i, 14);
  EXPECT_EQ(count_mismatches(values.to_double_vector(), want, 0.0, "half sum"), 0);

  Tensor b = Tensor::full({5}, static_cast<double>(r));
  ring.broadcast(b, n - 1);
  EXPECT_EQ(b.to_double_vector(), std::vector<double>(5, n - 1.0));
  int64_t count = 1;
  ring.host_allreduce(&count, 1, HostReduce::Sum);
  EXPECT_EQ(count, n);
  ring.barrier();
  EXPECT_EQ(ring.rank(), r);
  EXPECT_EQ(ring.size(), n);
}

}  // namespace
}  // namespace nd::dist
