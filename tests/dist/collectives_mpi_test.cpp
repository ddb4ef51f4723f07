// Every Comm collective, native (MPI) and ours (RingComm: ring, chain broadcast, pairwise
// all-to-all), under mpirun -np 2, 3, 4 against closed forms of rank-dependent integer inputs:
// all-reduce (sum, avg, max), reduce-scatter, all-gather, broadcast from every root, all-to-all;
// sizes from empty blocks to several ring slices; f32 and bf16 (data movement also i32).
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

// Native and ours, with small slices so that the larger sizes pipeline the chain and the ring.
struct Impls {
  Comm& native = test::mpi_world();
  RingComm ours{native, [] {
                  RingOptions options;
                  options.slice_bytes = 64;
                  return options;
                }()};
  std::vector<std::pair<const char*, Comm*>> all() { return {{"native", &native}, {"ours", &ours}}; }
};

const std::vector<int64_t> kBlocks = {0, 1, 5, 64, 1001};

std::vector<double> reduction(ReduceOp op, int n, int64_t count, uint64_t seed, int64_t begin) {
  std::vector<double> out(count, op == ReduceOp::Max ? -1e9 : 0.0);
  for (int q = 0; q < n; ++q)
    for (int64_t i = 0; i < count; ++i) {
      const double v = rank_value(q, begin + i, seed);
      out[i] = op == ReduceOp::Max ? std::max(out[i], v) : out[i] + v;
    }
  if (op == ReduceOp::Avg)
    for (double& v : out) v /= n;
  return out;
}

TEST(Collectives, AllReduceAndReduceScatter) {
  Impls impls;
  const int n = test::mpi_world().size(), r = test::mpi_world().rank();
  for (auto [name, comm] : impls.all())
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max})
      for (DType dtype : {DType::F32, DType::BF16})
        for (int64_t block : kBlocks) {
          if (op == ReduceOp::Max && dtype == DType::BF16) continue;  // max: f32 only
          SCOPED_TRACE(std::string(name) + " " + reduce_op_name(op) + " " + dtype_name(dtype) + " block " +
                       std::to_string(block));
          const double tol = rounding_tolerance(dtype);
          Tensor a = rank_input(r, block * n, dtype, 21);
          comm->allreduce(a, op);
          EXPECT_EQ(count_mismatches(a.to_double_vector(), reduction(op, n, block * n, 21, 0), tol, "allreduce"), 0);
          const Tensor input = rank_input(r, block * n, dtype, 22);
          Tensor out = Tensor::full({block}, -99.0, dtype);
          comm->reduce_scatter(input, out, op);
          EXPECT_EQ(count_mismatches(out.to_double_vector(), reduction(op, n, block, 22, r * block), tol, "reduce_scatter"), 0);
        }
}

TEST(Collectives, AllGather) {
  Impls impls;
  const int n = test::mpi_world().size(), r = test::mpi_world().rank();
  for (auto [name, comm] : impls.all())
    for (DType dtype : {DType::F32, DType::BF16})
      for (int64_t block : kBlocks) {
        SCOPED_TRACE(std::string(name) + " " + dtype_name(dtype) + " block " + std::to_string(block));
        Tensor mine = rank_input(r, block, dtype, 23);
        Tensor all = Tensor::full({block * n}, -99.0, dtype);
        comm->all_gather(mine, all);
        std::vector<double> want;
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < block; ++i) want.push_back(rank_value(q, i, 23));
        EXPECT_EQ(all.to_double_vector(), want);
      }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  Impls impls;
  const int n = test::mpi_world().size(), r = test::mpi_world().rank();
  for (auto [name, comm] : impls.all())
    for (DType dtype : {DType::F32, DType::BF16, DType::I32})
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{1001}})
        for (int root = 0; root < n; ++root) {
          SCOPED_TRACE(std::string(name) + " " + dtype_name(dtype) + " count " + std::to_string(count) + " root " +
                       std::to_string(root));
          Tensor b = rank_input(r, count, DType::F32, 24).to(dtype);
          comm->broadcast(b, root);
          std::vector<double> want(count);
          for (int64_t i = 0; i < count; ++i) want[i] = rank_value(root, i, 24);
          EXPECT_EQ(b.to_double_vector(), want);
        }
}

TEST(Collectives, AllToAll) {
  Impls impls;
  const int n = test::mpi_world().size(), r = test::mpi_world().rank();
  for (auto [name, comm] : impls.all())
    for (DType dtype : {DType::F32, DType::BF16, DType::I32})
      for (int64_t block : kBlocks) {
        SCOPED_TRACE(std::string(name) + " " + dtype_name(dtype) + " block " + std::to_string(block));
        // Element j of rank q's input is rank_value(q, j): block r of it lands in block q of ours.
        const Tensor input = rank_input(r, block * n, DType::F32, 25).to(dtype);
        Tensor output = Tensor::full({block * n}, -99.0, dtype);
        comm->all_to_all(input, output);
        std::vector<double> want;
        for (int q = 0; q < n; ++q)
          for (int64_t i = 0; i < block; ++i) want.push_back(rank_value(q, r * block + i, 25));
        EXPECT_EQ(output.to_double_vector(), want);
      }
  // Bad shapes are errors on both.
  for (auto [name, comm] : impls.all()) {
    Tensor input = Tensor::zeros({n + 1}), output = Tensor::zeros({n + 1});
    EXPECT_THROW(comm->all_to_all(input, output), Error) << name;
    Tensor same = Tensor::zeros({n});
    EXPECT_THROW(comm->all_to_all(same, same), Error) << name;
  }
}

}  // namespace
}  // namespace nd::dist
