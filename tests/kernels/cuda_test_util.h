// Helpers for the GPU tests: fixed seeds, CPU/GPU copies in a dtype, poisoned allocations, the
// |d| <= atol + rtol |ref| and one-ulp comparisons that print the first mismatches, and a harness
// that runs one op forward and backward on the CPU (f32 reference) and on the GPU and compares
// everything.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_stream.h"
#endif

namespace nd::test {

#define ND_SKIP_WITHOUT_GPU() \
  if (!::nd::cuda_available()) GTEST_SKIP() << "no CUDA device"

// The seed of a randomized test: fixed, never drawn afresh, so a run repeats the last one (a test
// that fails one run in 30 must fail every run). It is a hash of the running test's name and of how
// many seeds that test took before, so tests, and the calls within one test, draw different inputs.
// Printed so a failure names it.
inline uint64_t test_seed() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  static std::string last_test;
  static int calls = 0;
  if (name != last_test) {
    last_test = name;
    calls = 0;
  }
  uint64_t seed = 14695981039346656037ull;  // FNV-1a
  for (char c : name + "#" + std::to_string(calls++)) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::printf("[ seed     ] %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

// Runs `check` once with each of several fixed seeds, each failure naming its seed.
inline void for_each_seed(const std::function<void(uint64_t)>& check) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    check(seed);
  }
}

// Normal(0, scale) values as an f32 CPU tensor, already rounded to `dtype` (so CPU and GPU start
// from identical numbers).
inline Tensor random_input(const Shape& shape, Generator& gen, DType dtype, double scale = 1.0) {
  Tensor t = Tensor::randn(shape, gen, 0.0, scale, DType::F32);
  return dtype == DType::F32 ? t : t.to(dtype).to(DType::F32);
}

inline Tensor on_gpu(const Tensor& cpu_f32, DType dtype) { return cpu_f32.to(dtype).to(Device::cuda(0)); }

// Column-major D (m, n) = A (m, k) · B (k, n) in float64: the reference of the GEMM tests.
inline std::vector<double> column_major_product(const std::vector<double>& a, const std::vector<double>& b,
                                                int64_t m, int64_t n, int64_t k) {
  std::vector<double> d(static_cast<size_t>(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t i = 0; i < m; ++i) d[i + j * m] += a[i + p * m] * b[p + j * k];
  return d;
}

// Fills the next device allocation of this size with 0xFF bytes (NaN in f32 and bf16): the caching
// allocator hands the most recently freed block of a size out first.
inline void poison_next_allocation(const Shape& shape, DType dtype) {
#if NANODIST_WITH_CUDA
  Tensor t = Tensor::empty(shape, dtype, Device::cuda(0));
  if (t.nbytes()) {
    cudaMemsetAsync(t.raw_data(), 0xFF, t.nbytes(), compute_stream(0));
    cudaStreamSynchronize(compute_stream(0));
  }
#else
  (void)shape;
  (void)dtype;
#endif
}

// |actual - expected| <= atol + rtol |expected| elementwise, atol = atol_rel * max |expected|.
// NaN never passes. Prints the first mismatches; returns their count.
inline int64_t expect_close(const Tensor& actual, const Tensor& expected, double atol_rel, double rtol,
                            const std::string& what) {
  EXPECT_EQ(actual.shape(), expected.shape()) << what;
  if (actual.shape() != expected.shape()) return 1;
  std::vector<double> a = actual.to_double_vector(), e = expected.to_double_vector();
  double max_abs = 0;
  for (double v : e) max_abs = std::max(max_abs, std::abs(v));
  double atol = atol_rel * max_abs + 1e-30;
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::abs(a[i] - e[i]);
    if (!(d <= atol + rtol * std::abs(e[i]))) {
      if (++bad <= 5)
        ADD_FAILURE() << what << ": element " << i << " gpu " << a[i] << " cpu " << e[i] << " |d| " << d << " > "
                      << atol + rtol * std::abs(e[i]);
    }
  }
  if (bad)
    ADD_FAILURE() << what << ": " << bad << " of " << a.size() << " elements differ (max |ref| " << max_abs << ")";
  return bad;
}

// One unit in the last place of `dtype` at magnitude |x|: the gap between the two values of
// dtype around x (the subnormal gap below dtype's smallest normal).
inline double ulp_of(DType dtype, double x) {
  const int mantissa_bits = dtype == DType::BF16 ? 7 : dtype == DType::F16 ? 10 : 23;
  const int min_exponent = dtype == DType::F16 ? -14 : -126;
  int exponent = min_exponent + 1;
  if (x != 0) std::frexp(x, &exponent);  // |x| = f 2^exponent, f in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 1, min_exponent) - mantissa_bits);
}

// Every element of `actual` (values of `dtype`) at most one ulp of dtype from `expected`, taken at
// the larger magnitude of the two: for results that CPU and GPU round to dtype from f32 values that
// agree closely but not bit for bit, so that a value next to a rounding boundary may land on either
// side of it. Prints the first mismatches; returns their count.
inline int64_t expect_within_one_ulp(const Tensor& actual, const Tensor& expected, DType dtype,
                                     const std::string& what) {
  EXPECT_EQ(actual.shape(), expected.shape()) << what;
  if (actual.shape() != expected.shape()) return 1;
  std::vector<double> a = actual.to_double_vector(), e = expected.to_double_vector();
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(a[i] - e[i]), ulp = ulp_of(dtype, std::max(std::abs(a[i]), std::abs(e[i])));
    if (!(d <= ulp) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " gpu " << a[i] << " cpu " << e[i] << " |d| " << d << " > one ulp "
                    << ulp;
  }
  if (bad) ADD_FAILURE() << what << ": " << bad << " of " << a.size() << " elements differ by more than one ulp";
  return bad;
}

struct Tolerance {
  double atol_rel, rtol;
};
inline Tolerance tolerance_for(DType dtype) {
  return dtype == DType::F32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-2, 1e-2};
}

using DeviceOp = std::function<Variable(const std::vector<Variable>&, Device)>;

// Runs `op` on the CPU (f32) and on cuda:0 (dtype) from the same inputs (rounded to dtype), with
// random initial gradients (the backward must add to them; with seed_grads false there are none and
// the first input's new gradient buffer is poisoned) and a random output gradient; compares the
// output and every gradient. The GPU output's buffer is poisoned before the call. The GPU output
// is of `dtype`, or of `out_dtype` where given (a loss: f32 for bf16 and f16 logits,
// ops::loss_dtype), and is then compared at that dtype's tolerance.
inline void check_op_against_cpu(const DeviceOp& op, const std::vector<Tensor>& inputs,
                                 const std::vector<bool>& requires_grad, DType dtype, Generator& gen,
                                 const std::string& name, bool seed_grads = true,
                                 std::optional<DType> out_dtype = std::nullopt) {
  Tolerance tol = tolerance_for(dtype);
  const DType want_out = out_dtype.value_or(dtype);
  const Tolerance out_tol = tolerance_for(want_out);
  std::vector<Variable> cpu_vars, gpu_vars;
  for (size_t i = 0; i < inputs.size(); ++i) {
    cpu_vars.emplace_back(inputs[i].clone(), requires_grad[i]);
    gpu_vars.emplace_back(on_gpu(inputs[i], dtype), requires_grad[i]);
  }
  Variable cpu_out = op(cpu_vars, Device::cpu());
  poison_next_allocation(cpu_out.shape(), want_out);
  Variable gpu_out = op(gpu_vars, Device::cuda(0));
  ASSERT_EQ(gpu_out.dtype(), want_out) << name;
  expect_close(gpu_out.data(), cpu_out.data(), out_tol.atol_rel, out_tol.rtol, name + " forward");

  Tensor grad_out = random_input(cpu_out.shape(), gen, dtype);
  for (size_t i = 0; i < inputs.size() && seed_grads; ++i) {
    if (!requires_grad[i]) continue;
    Tensor g0 = random_input(inputs[i].shape(), gen, dtype, 0.1);
    cpu_vars[i].autograd()->grad = g0.clone();
    gpu_vars[i].autograd()->grad = on_gpu(g0, dtype);
  }
  cpu_out.backward(grad_out);
  Tensor gpu_grad_out = on_gpu(grad_out, want_out);  // grad_out's values are dtype's: exact in want_out
  if (!seed_grads) poison_next_allocation(inputs[0].shape(), dtype);
  gpu_out.backward(gpu_grad_out);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!requires_grad[i]) continue;
    expect_close(gpu_vars[i].grad(), cpu_vars[i].grad(), tol.atol_rel, tol.rtol,
                 name + " grad of input " + std::to_string(i));
  }
}

#if NANODIST_WITH_CUDA
// True when GPU 0 has FP8 tensor cores (compute capability 8.9 and above: Ada, Hopper).
inline bool has_fp8_tensor_cores() {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return false;
  return prop.major * 10 + prop.minor >= 89;
}
#endif

// How far an FP8 tensor-core GEMM over k products may stray from the exact sum of its
// dequantised products, relative to the sum of their magnitudes. Hopper's FP8 MMA adds the 32
// products of one instruction (and the accumulator it adds them to) aligned to the largest of
// them in about 14 mantissa bits, truncating (DeepSeek-V3 technical report, 3.3.2): each
// instruction may lose one unit in that last place, 2^-13 of at most the running magnitude.
// How often cuBLASLt promotes the partial sums to f32 is not documented, so the bound counts
// every instruction along k. Measured on H200 at k = 256: mostly 1-3e-5 of the magnitude, once
// 1.5e-4 (over the single-instruction bound of 2^-13).
inline double fp8_accumulation_rel(int64_t k) { return std::ldexp(1.0, -13) * static_cast<double>((k + 31) / 32); }

}  // namespace nd::test
