// FP8 GEMMs through cuBLASLt (kernels/cuda/cublaslt.h, Hopper's TN layout) against the CPU: inputs
// quantised on the CPU by the reference of kernels/cpu/fp8_quantize.h with delayed scaling's scale
// (fp8 max / amax), the GPU's product of the codes (f32 accumulation, bf16 or f32 out) equals the
// float64 product of the dequantised values to the tensor cores' accumulation (fp8_accumulation_rel)
// and output rounding, and that product
// is within the formats' error bound of the f32 product of the unquantised inputs. E4M3 x E4M3
// (forward) and E5M2 x E4M3 (a gradient times a weight, backward). Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/fp8_quantize.h"
#include "kernels/cuda_test_util.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cublaslt.h"
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
using test::has_fp8_tensor_cores;

struct Quantised {
  std::vector<float> x;         // the f32 input
  std::vector<uint8_t> codes;   // its FP8 codes
  float scale_inv = 1.0f;       // dequantisation factor
  double half_ulp = 0.0;        // relative rounding bound of a normal value: 2^-(mantissa bits + 1)
  double abs_floor = 0.0;       // absolute rounding bound below the normals: half the subnormal spacing
};

Quantised quantise(int64_t n, Fp8Format f, std::mt19937_64& rng, float spread) {
  Quantised q;
  std::normal_distribution<float> normal(0.0f, spread);
  q.x.resize(static_cast<size_t>(n));
  for (float& v : q.x) v = normal(rng);
  float amax = 0.0f;
  for (float v : q.x) amax = std::max(amax, std::fabs(v));
  const float scale = fp8_max(f) / amax;
  q.codes.resize(q.x.size());
  cpu::fp8_quantize(q.x.data(), n, scale, f, q.codes.data());
  q.scale_inv = 1.0f / scale;
  q.half_ulp = std::ldexp(1.0, -(fp8_spec(f).mantissa_bits + 1));
  q.abs_floor = 0.5 * fp8_decode(1, f) / scale;
  return q;
}

Tensor codes_on_gpu(const std::vector<uint8_t>& codes) {
  Tensor t = Tensor::zeros({static_cast<int64_t>((codes.size() + 3) / 4)}, DType::I32);
  std::copy(codes.begin(), codes.end(), static_cast<uint8_t*>(t.raw_data()));
  return t.to(Device::cuda(0));
}

// D (m, n) column-major = A^T B with A stored (k, m) and B stored (k, n), k contiguous (TN).
void check_fp8_gemm(Fp8Format fa, Fp8Format fb, DType d_type, bool fast_accum = false) {
  const int64_t m = 96, n = 80, k = 256;
  std::mt19937_64 rng(test::test_seed());
  Quantised a = quantise(m * k, fa, rng, 0.02f), b = quantise(k * n, fb, rng, 1.0f);
  Tensor da = codes_on_gpu(a.codes), db = codes_on_gpu(b.codes);
  Tensor scales = Tensor::from_vector(std::vector<float>{a.scale_inv, 0, 0, 0, b.scale_inv}, {5}).to(Device::cuda(0));
  Tensor d = Tensor::full({m * n}, NAN, d_type, Device::cuda(0));  // poisoned
  cuda::GemmProblem p;
  p.fp8 = true;
  p.fast_accum = fast_accum;
  p.a_format = fa;
  p.b_format = fb;
  p.d_type = d_type;
  p.trans_a = true;
  p.m = m, p.n = n, p.k = k;
  p.A = da.raw_data(), p.lda = k;
  p.B = db.raw_data(), p.ldb = k;
  p.D = d.raw_data(), p.ldd = m;
  p.a_scale = scales.data<float>();
  p.b_scale = scales.data<float>() + 4;
  cuda::gemm(p);
  std::vector<double> got = d.to(Device::cpu()).to_double_vector();
  const double out_rel = d_type == DType::BF16 ? std::ldexp(1.0, -8) : 1e-6;
  int bad = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double deq = 0.0, exact = 0.0, magnitude = 0.0, format_bound = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        const double av = fp8_decode(a.codes[i * k + t], fa) * static_cast<double>(a.scale_inv);
        const double bv = fp8_decode(b.codes[j * k + t], fb) * static_cast<double>(b.scale_inv);
        const double ax = a.x[i * k + t], bx = b.x[j * k + t];
        deq += av * bv;
        exact += ax * bx;
        magnitude += std::fabs(av * bv);
        // |a b - â b̂| <= |â - a||b| + |a||b̂ - b| + |â - a||b̂ - b|, each rounding within its bound.
        const double ea = std::max(a.half_ulp * std::fabs(ax), a.abs_floor);
        const double eb = std::max(b.half_ulp * std::fabs(bx), b.abs_floor);
        format_bound += ea * std::fabs(bx) + std::fabs(ax) * eb + ea * eb;
      }
      const double g = got[i + j * m];
      const bool gemm_ok = std::fabs(g - deq) <= out_rel * std::fabs(deq) + test::fp8_accumulation_rel(k) * magnitude;
      const bool format_ok = std::fabs(deq - exact) <= format_bound * 1.0001;
      if ((!gemm_ok || !format_ok) && ++bad <= 5)
        ADD_FAILURE() << "D(" << i << "," << j << ") = " << g << ": dequantised product " << deq << ", f32 product "
                      << exact << " (format bound " << format_bound << ")";
    }
}
#endif

TEST(Fp8GemmCuda, E4M3ForwardMatchesTheCpuReference) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  check_fp8_gemm(Fp8Format::E4M3, Fp8Format::E4M3, DType::BF16);
  check_fp8_gemm(Fp8Format::E4M3, Fp8Format::E4M3, DType::F32);
  // The forward's fast accumulation: no promotion to f32 along k, within the same per-MMA bound.
  check_fp8_gemm(Fp8Format::E4M3, Fp8Format::E4M3, DType::F32, true);
  check_fp8_gemm(Fp8Format::E4M3, Fp8Format::E4M3, DType::BF16, true);
#endif
}

TEST(Fp8GemmCuda, E5M2GradientTimesE4M3WeightMatchesTheCpuReference) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  check_fp8_gemm(Fp8Format::E5M2, Fp8Format::E4M3, DType::BF16);
#endif
}

TEST(Fp8GemmCuda, RefusesLayoutsAndCombinationsWithoutAnFp8Kernel) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Tensor x = Tensor::zeros({1024}, DType::F32, Device::cuda(0));
  cuda::GemmProblem p;
  p.fp8 = true;
  p.d_type = DType::BF16;
  p.m = p.n = p.k = 32;
  p.A = p.B = p.D = x.raw_data();
  p.lda = p.ldb = p.ldd = 32;
  p.a_scale = p.b_scale = x.data<float>();
  EXPECT_THROW(cuda::gemm(p), Error);  // NN: not TN
  p.trans_a = true;
  p.a_format = p.b_format = Fp8Format::E5M2;
  EXPECT_THROW(cuda::gemm(p), Error);  // E5M2 x E5M2
  p.a_format = Fp8Format::E4M3;
  p.b_scale = nullptr;
  EXPECT_THROW(cuda::gemm(p), Error);  // a missing scale
#endif
}

}  // namespace
}  // namespace nd
