// Rank-dependent inputs with closed-form answers for the collective tests: element i of rank r
// is a small integer drawn from Philox(seed, i, stream r), so any rank can regenerate every
// other rank's input, and sums over a few ranks are exact in f32 and bf16.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm/comm.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace nd::test {

// An integer in [-8, 8].
inline float rank_value(int rank, int64_t i, uint64_t seed) {
  return std::floor(philox_uniform(seed, static_cast<uint64_t>(i), static_cast<uint64_t>(rank)) * 17.0f) - 8.0f;
}

inline Tensor rank_input(int rank, int64_t count, DType dtype, uint64_t seed, Device device = Device::cpu()) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = rank_value(rank, i, seed);
  return Tensor::from_vector(values, {count}, dtype).to(device);
}

// Element i of the sum over ranks [0, nranks) (exact: integers of magnitude <= 8 * nranks).
inline std::vector<double> sum_over_ranks(int nranks, int64_t count, uint64_t seed, int64_t begin = 0) {
  std::vector<double> sum(count, 0.0);
  for (int r = 0; r < nranks; ++r)
    for (int64_t i = 0; i < count; ++i) sum[i] += rank_value(r, begin + i, seed);
  return sum;
}

// The closed form of reducing every rank's input with `op` (Sum or Avg) over elements [begin,
// begin + count).
inline std::vector<double> reduced_over_ranks(int nranks, int64_t count, uint64_t seed, dist::ReduceOp op,
                                              int64_t begin = 0) {
  std::vector<double> out = sum_over_ranks(nranks, count, seed, begin);
  if (op == dist::ReduceOp::Avg)
    for (double& v : out) v /= nranks;
  return out;
}

// Relative tolerance of one rounding in `dtype` (plus the scale by 1/N for averages).
inline double rounding_tolerance(DType dtype) { return dtype == DType::BF16 ? 1.0 / 128 : 1e-6; }

// Counts elements with |got - want| > rtol |want| + atol and reports the first few.
inline int64_t count_mismatches(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                                const char* what, double atol = 1e-12) {
  EXPECT_EQ(got.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= rtol * std::fabs(want[i]) + atol) continue;
    if (wrong < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
    ++wrong;
  }
  return wrong;
}

// Expects `got` within two roundings in `dtype` of `want`. An average may scale each term before
// summing (NCCL does): where the terms cancel that differs by up to a rounding of each, the atol.
inline void expect_reduced_near(const Tensor& got, const std::vector<double>& want, DType dtype, dist::ReduceOp op,
                                const std::string& what) {
  const double rtol = 2 * rounding_tolerance(dtype), atol = op == dist::ReduceOp::Avg ? rtol * 8.0 : 1e-12;
  EXPECT_EQ(count_mismatches(got.to_double_vector(), want, rtol, what.c_str(), atol), 0);
}

}  // namespace nd::test
