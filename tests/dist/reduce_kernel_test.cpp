// The CPU reduce loops of the collectives against a float64 reference: dst = (dst + src) * scale,
// the row sum of the direct path, and the in-place scale; bf16 summed in f32, rounded once.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/reduce.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace nd {
namespace {

// The value a bf16 result must hold: the exact result rounded once to bf16.
double round_like(double exact, DType dtype) {
  return dtype == DType::BF16 ? bf16_to_f32(f32_to_bf16(static_cast<float>(exact))) : static_cast<float>(exact);
}

TEST(ReduceKernel, AddWithScaleMatchesReference) {
  Generator gen(3);
  const int64_t n = 1031;
  for (DType dtype : {DType::F32, DType::BF16}) {
    for (float scale : {1.0f, 0.25f, 1.0f / 3.0f}) {
      Tensor dst = Tensor::randn({n}, gen, 0.0, 1.0, dtype);
      Tensor src = Tensor::randn({n}, gen, 0.0, 1.0, dtype);
      std::vector<double> a = dst.to_double_vector(), b = src.to_double_vector();
      if (dtype == DType::F32) {
        cpu::reduce_add(dst.data<float>(), src.data<float>(), n, scale);
      } else {
        cpu::reduce_add(dst.data<bf16>(), src.data<bf16>(), n, scale);
      }
      std::vector<double> got = dst.to_double_vector();
      for (int64_t i = 0; i < n; ++i) {
        // f32 arithmetic: the sum and the product are each rounded once.
        double want = round_like(static_cast<double>(static_cast<float>(a[i] + b[i]) * scale), dtype);
        ASSERT_NEAR(got[i], want, 1e-6 * std::fabs(want) + 1e-7) << dtype_name(dtype) << " element " << i;
      }
    }
  }
}

TEST(ReduceKernel, RowsSumInRankOrder) {
  Generator gen(4);
  const int rows = 5;
  const int64_t n = 333;
  for (DType dtype : {DType::F32, DType::BF16}) {
    Tensor in = Tensor::randn({rows, n}, gen, 0.0, 1.0, dtype);
    Tensor out = Tensor::full({n}, 1e30, dtype);  // poisoned: every element must be written
    std::vector<double> v = in.to_double_vector();
    if (dtype == DType::F32) {
      cpu::reduce_rows(out.data<float>(), in.data<float>(), rows, n, 0.5f);
    } else {
      cpu::reduce_rows(out.data<bf16>(), in.data<bf16>(), rows, n, 0.5f);
    }
    std::vector<double> got = out.to_double_vector();
    for (int64_t i = 0; i < n; ++i) {
      double exact = 0, magnitude = 0;
      for (int r = 0; r < rows; ++r) {
        exact += v[r * n + i];
        magnitude += std::fabs(v[r * n + i]);
      }
      // f32 accumulation errors scale with the terms' magnitudes (cancellation); bf16 adds
      // one final rounding of the result.
      double tol = 1e-6 * magnitude + (dtype == DType::BF16 ? std::fabs(0.5 * exact) / 256 : 0.0);
      ASSERT_NEAR(got[i], 0.5 * exact, tol) << dtype_name(dtype) << " element " << i;
    }
  }
}

TEST(ReduceKernel, OwnRowIsReadFromTheDestination) {
  Generator gen(5);
  const int rows = 4, own = 2;
  const int64_t n = 257;
  Tensor in = Tensor::randn({rows, n}, gen);
  Tensor want = Tensor::empty({n});
  cpu::reduce_rows(want.data<float>(), in.data<float>(), rows, n, 0.25f);
  Tensor got = in.select(own).clone();
  in.select(own).fill_(1e30);  // the slot of the own row must not be read
  cpu::reduce_rows(got.data<float>(), in.data<float>(), rows, n, 0.25f, own);
  EXPECT_EQ(got.to_double_vector(), want.to_double_vector());  // same order, same roundings
}

TEST(ReduceKernel, ScaleInPlace) {
  Tensor t = Tensor::from_vector(std::vector<float>{2, -4, 6}, {3}, DType::BF16);
  cpu::scale_inplace(t.data<bf16>(), 3, 0.5f);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{1, -2, 3}));
}

}  // namespace
}  // namespace nd
