// cuBLASLt GEMMs with separate input and output types (kernels/cuda/cublaslt.h): bf16 inputs with
// an f32 output, written (beta 0) and accumulated (beta 1, the main-gradient case), against a
// float64 product of the same bf16 values on the CPU; and the type combinations it must refuse.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda_test_util.h"
#include "tensor/error.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/cublaslt.h"
#endif

namespace nd {
namespace {

TEST(GemmTypes, Bf16InputsIntoAnF32OutputWrittenAndAccumulated) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  const int64_t m = 96, n = 40, k = 72;
  Generator gen(test::test_seed());
  Tensor a = test::random_input({m * k}, gen, DType::BF16), b = test::random_input({k * n}, gen, DType::BF16);
  Tensor prior = test::random_input({m * n}, gen, DType::F32);
  std::vector<double> want = test::column_major_product(a.to_double_vector(), b.to_double_vector(), m, n, k);
  Tensor da = a.to(DType::BF16).to(Device::cuda(0)), db = b.to(DType::BF16).to(Device::cuda(0));
  for (float beta : {0.0f, 1.0f}) {
    Tensor d = prior.to(Device::cuda(0));
    cuda::GemmProblem p;
    p.a_type = DType::BF16;
    p.d_type = DType::F32;
    p.m = m, p.n = n, p.k = k;
    p.A = da.raw_data(), p.lda = m;
    p.B = db.raw_data(), p.ldb = k;
    p.D = d.raw_data(), p.ldd = m;
    p.beta = beta;
    cuda::gemm(p);
    std::vector<double> got = d.to(Device::cpu()).to_double_vector(), before = prior.to_double_vector();
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double expected = want[i] + beta * before[i];
      if (std::abs(got[i] - expected) > 1e-4 + 1e-5 * std::abs(expected) && ++bad <= 5)
        ADD_FAILURE() << "beta " << beta << " element " << i << ": " << got[i] << ", expected " << expected;
    }
  }
#endif
}

TEST(GemmTypes, RefusesNarrowerOutputsAndScalesOutsideFp8) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Tensor x = Tensor::zeros({64}, DType::F32, Device::cuda(0));
  cuda::GemmProblem p;
  p.m = p.n = p.k = 8;
  p.A = p.B = p.D = x.raw_data();
  p.lda = p.ldb = p.ldd = 8;
  p.a_type = DType::F32;
  p.d_type = DType::BF16;
  EXPECT_THROW(cuda::gemm(p), Error);
  p.d_type = DType::F32;
  p.a_scale = x.data<float>();
  EXPECT_THROW(cuda::gemm(p), Error);
#endif
}

}  // namespace
}  // namespace nd
