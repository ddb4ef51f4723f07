// CUDA multi-tensor AdamW and global norm against the CPU kernels (adamw_update, sum_of_squares):
// several tensors of odd sizes in one launch, per-tensor weight decay, a device-side clip scale;
// f32 parameters (updated in place) and bf16 parameters with f32 master weights; buffers that
// start on a vector boundary (the kernel's packed path) and one element past it (element by element).
// Each check runs with several fixed seeds.
#include <cmath>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/global_norm.h"
#include "kernels/cuda_test_util.h"

// The raw CUDA kernels exist only in a CUDA build; without one this file holds no tests.
#if NANODIST_WITH_CUDA
namespace nd::test {
namespace {

const std::vector<int64_t> kSizes = {1000, 17, 4097, 1};
const std::vector<float> kDecay = {0.1f, 0.0f, 0.1f, 0.0f};

float host_value(const Tensor& t) { return static_cast<float>(t.to_double_vector()[0]); }

// A view of `t`'s values that starts `shift` elements into a larger device buffer.
Tensor shifted(const Tensor& t, int64_t shift) {
  if (shift == 0) return t;
  Tensor view = Tensor::zeros({t.numel() + shift}, t.dtype(), t.device()).narrow(shift, t.numel());
  view.copy_from(t);
  return view;
}

// Runs three steps on the GPU and on the CPU (f32 throughout) and compares parameters, m and v.
void check_adamw(DType dtype, int64_t shift, uint64_t seed) {
  Generator gen(seed);
  const float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, max_norm = 1.0f;
  std::vector<Tensor> cpu_w, cpu_m, cpu_v, gpu_param, gpu_grad, gpu_master, gpu_m, gpu_v;
  for (int64_t n : kSizes) {
    Tensor w = random_input({n}, gen, dtype);
    cpu_w.push_back(w.clone());
    cpu_m.push_back(Tensor::zeros({n}));
    cpu_v.push_back(Tensor::zeros({n}));
    gpu_param.push_back(shifted(on_gpu(w, dtype), shift));
    gpu_master.push_back(shifted(on_gpu(w, DType::F32), shift));
    gpu_m.push_back(shifted(Tensor::zeros({n}, DType::F32, Device::cuda(0)), shift));
    gpu_v.push_back(shifted(Tensor::zeros({n}, DType::F32, Device::cuda(0)), shift));
    gpu_grad.push_back(shifted(Tensor::zeros({n}, dtype, Device::cuda(0)), shift));
  }
  std::vector<cuda::AdamWSlot<float>> slots_f32;
  std::vector<cuda::AdamWSlot<bf16>> slots_bf16;
  std::vector<cuda::NormSlot<float>> norm_f32;
  std::vector<cuda::NormSlot<bf16>> norm_bf16;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    float* master = dtype == DType::F32 ? nullptr : gpu_master[i].data<float>();
    if (dtype == DType::F32) {
      slots_f32.push_back({gpu_param[i].data<float>(), gpu_grad[i].data<float>(), master, gpu_m[i].data<float>(),
                           gpu_v[i].data<float>(), kSizes[i], kDecay[i]});
      norm_f32.push_back({gpu_grad[i].data<float>(), kSizes[i]});
    } else {
      slots_bf16.push_back({gpu_param[i].data<bf16>(), gpu_grad[i].data<bf16>(), master, gpu_m[i].data<float>(),
                            gpu_v[i].data<float>(), kSizes[i], kDecay[i]});
      norm_bf16.push_back({gpu_grad[i].data<bf16>(), kSizes[i]});
    }
  }
  cuda::DeviceSlots<cuda::AdamWSlot<float>> dev_f32(slots_f32, 0);
  cuda::DeviceSlots<cuda::AdamWSlot<bf16>> dev_bf16(slots_bf16, 0);
  cuda::DeviceSlots<cuda::NormSlot<float>> dev_norm_f32(norm_f32, 0);
  cuda::DeviceSlots<cuda::NormSlot<bf16>> dev_norm_bf16(norm_bf16, 0);
  Tensor norm = Tensor::empty({1}, DType::F32, Device::cuda(0));
  Tensor clip = Tensor::empty({1}, DType::F32, Device::cuda(0));

  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<Tensor> grads;
    double sq = 0;
    for (size_t i = 0; i < kSizes.size(); ++i) {
      grads.push_back(random_input({kSizes[i]}, gen, dtype, 0.5));
      gpu_grad[i].copy_from(grads.back().to(dtype).to(Device::cuda(0)).to(dtype));
      sq += cpu::sum_of_squares(grads.back().data<float>(), kSizes[i]);
    }
    double ref_norm = std::sqrt(sq);
    float ref_scale = std::min(1.0f, max_norm / static_cast<float>(ref_norm + 1e-6));
    poison_next_allocation({1}, DType::F32);
    if (dtype == DType::F32) {
      cuda::global_norm(dev_norm_f32, norm.data<float>(), clip.data<float>(), max_norm);
      cuda::adamw_update(dev_f32, {lr, beta1, beta2, eps, 0.0f, step}, clip.data<float>());
    } else {
      cuda::global_norm(dev_norm_bf16, norm.data<float>(), clip.data<float>(), max_norm);
      cuda::adamw_update(dev_bf16, {lr, beta1, beta2, eps, 0.0f, step}, clip.data<float>());
    }
    EXPECT_NEAR(host_value(norm), ref_norm, 1e-5 * ref_norm) << "step " << step;
    EXPECT_NEAR(host_value(clip), ref_scale, 1e-5 * ref_scale) << "step " << step;
    for (size_t i = 0; i < kSizes.size(); ++i)
      cpu::adamw_update(cpu_w[i].data<float>(), grads[i].data<float>(), cpu_m[i].data<float>(),
                        cpu_v[i].data<float>(), kSizes[i], lr, beta1, beta2, eps, kDecay[i], step, ref_scale);
  }
  for (size_t i = 0; i < kSizes.size(); ++i) {
    std::string what = std::string(dtype_name(dtype)) + " tensor " + std::to_string(i);
    expect_close(gpu_m[i], cpu_m[i], 1e-5, 1e-5, what + " m");
    expect_close(gpu_v[i], cpu_v[i], 1e-5, 1e-5, what + " v");
    if (dtype == DType::F32) {
      expect_close(gpu_param[i], cpu_w[i], 1e-5, 1e-5, what + " param");
    } else {
      expect_close(gpu_master[i], cpu_w[i], 1e-5, 1e-5, what + " master");
      // The bf16 parameter is the kernel's own master weight rounded, bit for bit; against the CPU
      // it may be one bf16 ulp off where the two masters, a few f32 ulps apart, straddle a rounding
      // boundary.
      expect_close(gpu_param[i], gpu_master[i].to(Device::cpu()).to(DType::BF16), 0, 0,
                   what + " bf16 param of its master");
      expect_within_one_ulp(gpu_param[i], cpu_w[i].to(DType::BF16), DType::BF16, what + " bf16 param");
    }
  }
}

TEST(AdamWCuda, F32MatchesCpu) {
  ND_SKIP_WITHOUT_GPU();
  for_each_seed([](uint64_t seed) { check_adamw(DType::F32, 0, seed); });
}

TEST(AdamWCuda, Bf16WithMasterWeightsMatchesCpu) {
  ND_SKIP_WITHOUT_GPU();
  for_each_seed([](uint64_t seed) { check_adamw(DType::BF16, 0, seed); });
}

TEST(AdamWCuda, UnalignedBuffersMatchCpu) {
  ND_SKIP_WITHOUT_GPU();
  for_each_seed([](uint64_t seed) {
    check_adamw(DType::F32, 1, seed);
    check_adamw(DType::BF16, 1, seed);
  });
}

TEST(GlobalNormCuda, NoClipWhenMaxNormIsZero) {
  ND_SKIP_WITHOUT_GPU();
  for_each_seed([](uint64_t seed) {
    Generator gen(seed);
    Tensor x = on_gpu(random_input({3000}, gen, DType::F32), DType::F32);
    std::vector<cuda::NormSlot<float>> slots = {{x.data<float>(), 3000}};
    cuda::DeviceSlots<cuda::NormSlot<float>> dev(slots, 0);
    Tensor norm = Tensor::empty({1}, DType::F32, Device::cuda(0));
    Tensor clip = Tensor::empty({1}, DType::F32, Device::cuda(0));
    cuda::global_norm(dev, norm.data<float>(), clip.data<float>(), 0.0f);
    Tensor host = x.to(Device::cpu());
    double ref = std::sqrt(cpu::sum_of_squares(host.data<float>(), 3000));
    EXPECT_NEAR(host_value(norm), ref, 1e-5 * ref);
    EXPECT_EQ(host_value(clip), 1.0f);
  });
}

}  // namespace
}  // namespace nd::test
#endif  // NANODIST_WITH_CUDA
