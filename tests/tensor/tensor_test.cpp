// Tensor, views, dtype conversion and the counter-based RNG.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tensor/philox.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#include "tests/common/address_space_cap.h"

namespace nd {
namespace {

TEST(Tensor, FactoriesFillEveryElement) {
  Tensor z = Tensor::zeros({3, 4});
  Tensor o = Tensor::ones({3, 4});
  Tensor f = Tensor::full({2, 2}, 2.5, DType::F64);
  EXPECT_EQ(z.numel(), 12);
  for (double v : z.to_double_vector()) EXPECT_EQ(v, 0.0);
  for (double v : o.to_double_vector()) EXPECT_EQ(v, 1.0);
  for (double v : f.to_double_vector()) EXPECT_EQ(v, 2.5);
  EXPECT_EQ(f.dtype(), DType::F64);
}

TEST(Tensor, LargeFillsCoverEveryElement) {
  // Several 4 MiB pieces, spread over threads, and a tail that is not a whole piece.
  const int64_t n = 3'000'001;
  for (DType dtype : {DType::F32, DType::BF16, DType::F64, DType::U16}) {
    Tensor t = Tensor::full({n}, 3.0, dtype);
    std::vector<double> v = t.to_double_vector();
    EXPECT_EQ(std::count(v.begin(), v.end(), 3.0), n) << dtype_name(dtype);
    t.narrow(1, n - 2).zero_();
    v = t.to_double_vector();
    EXPECT_EQ(std::count(v.begin(), v.end(), 0.0), n - 2) << dtype_name(dtype);
    EXPECT_EQ(v.front() + v.back(), 6.0) << dtype_name(dtype) << ": a view's fill stays inside the view";
  }
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor v = t.view({3, 2});
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_EQ(v.shape(), (Shape{3, 2}));
  Tensor inferred = t.view({-1});
  EXPECT_EQ(inferred.shape(), (Shape{6}));
  Tensor row = t.select(1);
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.to_double_vector(), (std::vector<double>{3, 4, 5}));
  row.fill_(9.0);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 1, 2, 9, 9, 9}));
  Tensor n = t.view({6}).narrow(2, 3);
  EXPECT_EQ(n.to_double_vector(), (std::vector<double>{2, 9, 9}));
}

TEST(Tensor, BadViewsNameTheShapes) {
  Tensor t = Tensor::zeros({2, 3});
  try {
    t.view({4, 2});
    FAIL() << "view of the wrong size must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.view({-1, -1}), Error);
  EXPECT_THROW(t.narrow(1, 2), Error);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(t.item(), Error);
}

TEST(Tensor, OutOfHostMemoryNamesTheTensor) {
  test::AddressSpaceCap cap(size_t(1) << 30);
  ASSERT_TRUE(cap.applied());
  try {
    Tensor::empty({1000, 1000, 1000}, DType::F32);
    FAIL() << "4 GB under a 1 GB cap must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "out of host memory: 4 GB (4000000000 bytes) did not fit allocating a [1000, 1000, 1000] "
                           "f32 tensor");
  }
}

TEST(Tensor, CloneIsDeep) {
  Tensor t = Tensor::ones({4});
  Tensor c = t.clone();
  c.fill_(3.0);
  EXPECT_EQ(t.to_double_vector()[0], 1.0);
  EXPECT_FALSE(c.shares_storage(t));
}

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values (1 and 1 + 2^-7): ties go to even (1).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  // 1 + 3 * 2^-8 lies between 1 + 2^-7 (odd mantissa) and 1 + 2^-6 (even): goes up.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  // Just above the tie rounds up.
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))),
            1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(INFINITY))));
  Tensor t = Tensor::from_vector(std::vector<float>{0.1f, -3.7f, 1000.5f}, {3});
  std::vector<double> back = t.to(DType::BF16).to(DType::F32).to_double_vector();
  std::vector<double> ref = t.to_double_vector();
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(back[i], ref[i], std::abs(ref[i]) * (1.0 / 256));
}

TEST(Random, SameSeedSameNumbers) {
  Generator a(42), b(42), c(43);
  Tensor x = Tensor::randn({1000}, a);
  Tensor y = Tensor::randn({1000}, b);
  Tensor z = Tensor::randn({1000}, c);
  EXPECT_EQ(x.to_double_vector(), y.to_double_vector());
  EXPECT_NE(x.to_double_vector(), z.to_double_vector());
  // The next draw continues the stream rather than repeating it.
  Tensor x2 = Tensor::randn({1000}, a);
  EXPECT_NE(x.to_double_vector(), x2.to_double_vector());
  EXPECT_EQ(a.offset(), 2000u);
}

TEST(Random, NormalAndUniformHaveTheirMoments) {
  Generator g(7);
  const int n = 200000;
  std::vector<double> normal = Tensor::randn({n}, g, 1.0, 2.0).to_double_vector();
  std::vector<double> uni = Tensor::uniform({n}, g, -1.0, 3.0).to_double_vector();
  auto moments = [](const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= v.size();
    for (double x : v) s += (x - m) * (x - m);
    return std::make_pair(m, std::sqrt(s / v.size()));
  };
  auto [nm, ns] = moments(normal);
  EXPECT_NEAR(nm, 1.0, 0.02);
  EXPECT_NEAR(ns, 2.0, 0.02);
  auto [um, us] = moments(uni);
  EXPECT_NEAR(um, 1.0, 0.02);
  EXPECT_NEAR(us, 4.0 / std::sqrt(12.0), 0.02);
  for (double u : uni) {
    EXPECT_GE(u, -1.0);
    EXPECT_LT(u, 3.0);
  }
}

TEST(Random, PhiloxCountersAreIndependentOfOrder) {
  // Element i depends only on (seed, counter): drawing 10 then 10 equals drawing 20.
  Generator a(5), b(5);
  std::vector<double> whole = Tensor::uniform({20}, a).to_double_vector();
  std::vector<double> first = Tensor::uniform({10}, b).to_double_vector();
  std::vector<double> second = Tensor::uniform({10}, b).to_double_vector();
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(whole, first);
}

TEST(Device, ParsesNames) {
  EXPECT_TRUE(parse_device("cpu").is_cpu());
  EXPECT_EQ(parse_device("cuda:3").index, 3);
  EXPECT_EQ(parse_device("auto"), cuda_available() ? Device::cuda(0) : Device::cpu());
  EXPECT_THROW(parse_device("gpu"), Error);
  EXPECT_THROW(parse_device("cuda:x"), Error);
}

}  // namespace
}  // namespace nd
