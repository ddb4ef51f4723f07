// The GELU epilogue on the GPU. ops::gelu_mlp against the CPU reference (output and every
// gradient, f32 and bf16, with and without biases, first and later gradient contributions, and a
// hidden width cuBLASLt cannot fuse); and the MLP kernels against the unfused CUDA kernels at
// GPT-2 124M's MLP shapes: that the forward epilogue ran in bf16 (and not in f32), equal results,
// the same bits run to run.
#include "autograd/ops.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda_test_util.h"

namespace nd::test {
namespace {

void check_gelu_mlp(DType dtype, const Shape& x_shape, int64_t H, bool fc_bias, bool proj_bias, bool seed_grads) {
  Generator gen(test_seed());
  const int64_t C = x_shape.back();
  std::vector<Tensor> inputs = {random_input(x_shape, gen, dtype), random_input({H, C}, gen, dtype, 0.3),
                                random_input({C, H}, gen, dtype, 0.3), random_input({H}, gen, dtype),
                                random_input({C}, gen, dtype)};
  std::string name = "gelu_mlp " + std::string(dtype_name(dtype)) + " H=" + std::to_string(H) +
                     (fc_bias ? " fc_bias" : "") + (proj_bias ? " proj_bias" : "") +
                     (seed_grads ? " accumulating" : " first gradients");
  check_op_against_cpu(
      [fc_bias, proj_bias](const std::vector<Variable>& v, Device) {
        return ops::gelu_mlp(v[0], v[1], fc_bias ? v[3] : Variable(), v[2], proj_bias ? v[4] : Variable());
      },
      inputs, {true, true, true, fc_bias, proj_bias}, dtype, gen, name, seed_grads);
}

TEST(GeluMlpCuda, OpMatchesCpuInF32) {
  ND_SKIP_WITHOUT_GPU();
  for (bool seed_grads : {false, true}) {
    check_gelu_mlp(DType::F32, {3, 7, 32}, 128, true, true, seed_grads);
    check_gelu_mlp(DType::F32, {5, 24}, 36, true, false, seed_grads);  // H % 8 != 0: no epilogue
  }
  check_gelu_mlp(DType::F32, {2, 9, 64}, 256, false, true, false);
}

TEST(GeluMlpCuda, OpMatchesCpuInBf16) {
  ND_SKIP_WITHOUT_GPU();
  for (bool seed_grads : {false, true}) {
    check_gelu_mlp(DType::BF16, {2, 9, 64}, 256, true, true, seed_grads);
    check_gelu_mlp(DType::BF16, {5, 24}, 36, true, true, seed_grads);  // H % 8 != 0: no epilogue
  }
  check_gelu_mlp(DType::BF16, {4, 16, 64}, 256, false, false, false);
}

// Device tensors of the fc layer and its GELU: x (M, K), w (H, K), b (H), w2 (N, H), dout (M, N).
struct MlpBuffers {
  Tensor x, w, b, w2, dout;
};

MlpBuffers random_buffers(DType dtype, int64_t M, int64_t K, int64_t H, int64_t N, Generator& gen) {
  return {on_gpu(random_input({M, K}, gen, dtype), dtype), on_gpu(random_input({H, K}, gen, dtype, 0.05), dtype),
          on_gpu(random_input({H}, gen, dtype, 0.5), dtype), on_gpu(random_input({N, H}, gen, dtype, 0.05), dtype),
          on_gpu(random_input({M, N}, gen, dtype), dtype)};
}

// The fused forward and the input-gradient kernel against linear + gelu and linear's dx + gelu's
// backward + a column sum; returns whether the forward ran in cuBLASLt's epilogue.
template <typename T>
bool fused_matches_unfused(DType dtype, int64_t M, int64_t K, int64_t H, int64_t N) {
  Generator gen(test_seed());
  const MlpBuffers in = random_buffers(dtype, M, K, H, N, gen);
  const Device gpu = Device::cuda(0);
  const Tolerance tol = tolerance_for(dtype);
  const std::string what = std::string(dtype_name(dtype)) + " M=" + std::to_string(M) + " H=" + std::to_string(H);

  Tensor pre = Tensor::empty({M, H}, dtype, gpu), out = Tensor::empty({M, H}, dtype, gpu);
  Tensor pre_ref = Tensor::empty({M, H}, dtype, gpu), out_ref = Tensor::empty({M, H}, dtype, gpu);
  bool fused_forward = cuda::linear_gelu_forward(in.x.data<T>(), in.w.data<T>(), in.b.data<T>(), out.data<T>(),
                                                 pre.data<T>(), M, H, K);
  cuda::linear_forward(in.x.data<T>(), in.w.data<T>(), in.b.data<T>(), pre_ref.data<T>(), M, H, K);
  cuda::gelu_forward(pre_ref.data<T>(), out_ref.data<T>(), M * H);
  expect_close(pre, pre_ref, tol.atol_rel, tol.rtol, "GELU input " + what);
  expect_close(out, out_ref, tol.atol_rel, tol.rtol, "GELU output " + what);

  // First contribution to db, twice: the same bits both times.
  Tensor dpre = Tensor::empty({M, H}, dtype, gpu), db = Tensor::empty({H}, dtype, gpu);
  Tensor dpre_again = Tensor::empty({M, H}, dtype, gpu), db_again = Tensor::empty({H}, dtype, gpu);
  cuda::linear_dgelu_backward(in.dout.data<T>(), in.w2.data<T>(), pre_ref.data<T>(),
                                                    dpre.data<T>(), GradDest<T>{db.data<T>(), false}, M, N, H);
  cuda::linear_dgelu_backward(in.dout.data<T>(), in.w2.data<T>(), pre_ref.data<T>(), dpre_again.data<T>(),
                              GradDest<T>{db_again.data<T>(), false}, M, N, H);
  EXPECT_EQ(dpre.to_double_vector(), dpre_again.to_double_vector()) << "dpre run to run, " << what;
  EXPECT_EQ(db.to_double_vector(), db_again.to_double_vector()) << "db run to run, " << what;

  Tensor dh = Tensor::empty({M, H}, dtype, gpu), dpre_ref = Tensor::empty({M, H}, dtype, gpu);
  cuda::linear_backward(in.dout.data<T>(), out_ref.data<T>(), in.w2.data<T>(), GradDest<T>{dh.data<T>(), false},
                        GradDest<T>{}, GradDest<T>{}, M, N, H);
  cuda::gelu_backward(pre_ref.data<T>(), dh.data<T>(), GradDest<T>{dpre_ref.data<T>(), false}, M * H);
  expect_close(dpre, dpre_ref, tol.atol_rel, tol.rtol, "dpre " + what);
  // The bias gradient from the reference dpre, summed in f64 on the host.
  std::vector<double> d = dpre_ref.to_double_vector(), db_ref(H, 0.0);
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < H; ++c) db_ref[c] += d[r * H + c];
  Tensor db_expected = Tensor::from_vector(db_ref, {H});
  expect_close(db, db_expected, tol.atol_rel, tol.rtol, "db " + what);

  // A later contribution adds to db: seeded with the first one, it doubles.
  cuda::linear_dgelu_backward(in.dout.data<T>(), in.w2.data<T>(), pre_ref.data<T>(), dpre_again.data<T>(),
                              GradDest<T>{db_again.data<T>(), true}, M, N, H);
  for (double& v : db_ref) v *= 2;
  expect_close(db_again, Tensor::from_vector(db_ref, {H}), tol.atol_rel, tol.rtol, "db accumulated " + what);
  std::printf("[ fused    ] %s: forward epilogue %s\n", what.c_str(), fused_forward ? "yes" : "no");
  return fused_forward;
}

TEST(GeluMlpCuda, Bf16EpilogueRunsAtGpt2ShapesAndMatchesTheUnfusedKernels) {
  ND_SKIP_WITHOUT_GPU();
  // GPT-2 124M's MLP on 2 sequences of 1024: K = 768, H = 3072; and a quarter of it (tp = 4).
  EXPECT_TRUE((fused_matches_unfused<bf16>(DType::BF16, 2048, 768, 3072, 768)))
      << "cuBLASLt ran no GELU epilogue at GPT-2's bf16 shapes: the fusion fell back to separate kernels";
  EXPECT_TRUE((fused_matches_unfused<bf16>(DType::BF16, 2048, 768, 768, 768)));
}

TEST(GeluMlpCuda, F32MatchesTheUnfusedKernels) {
  ND_SKIP_WITHOUT_GPU();
  // f32 keeps the separate kernels (the precise path); the fused entry points must still match them.
  EXPECT_FALSE((fused_matches_unfused<float>(DType::F32, 512, 256, 1024, 256)));
  EXPECT_FALSE((fused_matches_unfused<float>(DType::F32, 100, 24, 36, 24)));
}

}  // namespace
}  // namespace nd::test
