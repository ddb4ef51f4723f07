// The kernel benchmark behind `nanodist-lab bench-kernels`. Inputs are filled on the device with Philox
// uniforms (never zeros); each op runs a few warm-up launches, then `iters` launches timed one by
// one with CUDA events on the compute stream; the median is returned. Bytes count each operand
// read or written once (the least any implementation must move), FLOPs the useful multiply-adds.
#include <algorithm>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/add.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_mma.cuh"
#include "lab/bench_kernels.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cublaslt.h"
#include "kernels/cuda/dropout.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/fp8_gelu_quantize.h"
#include "kernels/cuda/fp8_linear.h"
#include "kernels/cuda/fp8_quantize.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/global_norm.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cudnn/attention_cudnn.h"
#include "tensor/philox.h"
#include "tensor/tensor.h"

namespace nd::cuda {

namespace {

template <typename T>
__global__ void fill_uniform_kernel(T* x, int64_t n, float low, float high, uint64_t seed) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = from_f32<T>(low + (high - low) * philox_uniform(seed, i, 7));
}

__global__ void fill_ids_kernel(int32_t* x, int64_t n, int64_t V, uint64_t seed) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = static_cast<int32_t>(philox4x32(seed, i, 9).v[0] % V);
}

struct Bench {
  int iters = 20;
  uint64_t seed = 1;
  std::function<void(const KernelBenchRow&)> on_row;
  std::vector<KernelBenchRow> rows;

  Tensor random(const Shape& shape, DType dtype, float scale = 1.0f) { return uniform(shape, dtype, -scale, scale); }

  Tensor uniform(const Shape& shape, DType dtype, float low, float high) {
    Tensor t = Tensor::empty(shape, dtype, Device::cuda(0));
    int64_t n = t.numel();
    unsigned blocks = static_cast<unsigned>(ceil_div(n, 256));
    cudaStream_t s = compute_stream();
    if (dtype == DType::F32) {
      fill_uniform_kernel<<<blocks, 256, 0, s>>>(t.data<float>(), n, low, high, ++seed);
    } else {
      fill_uniform_kernel<<<blocks, 256, 0, s>>>(t.data<nd::bf16>(), n, low, high, ++seed);
    }
    CUDA_CHECK(cudaGetLastError());
    return t;
  }

  Tensor ids(const Shape& shape, int64_t V) {
    Tensor t = Tensor::empty(shape, DType::I32, Device::cuda(0));
    fill_ids_kernel<<<static_cast<unsigned>(ceil_div(t.numel(), 256)), 256, 0, compute_stream()>>>(
        t.data<int32_t>(), t.numel(), V, ++seed);
    CUDA_CHECK(cudaGetLastError());
    return t;
  }

  // Median seconds of one call of fn.
  double time(const std::function<void()>& fn) {
    cudaStream_t s = compute_stream();
    for (int i = 0; i < 3; ++i) fn();
    std::vector<cudaEvent_t> events(2 * iters);
    for (auto& e : events) CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < iters; ++i) {
      CUDA_CHECK(cudaEventRecord(events[2 * i], s));
      fn();
      CUDA_CHECK(cudaEventRecord(events[2 * i + 1], s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> ms(iters);
    for (int i = 0; i < iters; ++i) CUDA_CHECK(cudaEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]));
    for (auto& e : events) CUDA_CHECK(cudaEventDestroy(e));
    std::sort(ms.begin(), ms.end());
    return ms[iters / 2] * 1e-3;
  }

  void report(const std::string& op, const std::string& shape, double seconds, double bytes, double flops) {
    rows.push_back({op, shape, seconds, bytes, flops});
    if (on_row) on_row(rows.back());
  }
};

// FP8 tensor cores (Ada, Hopper and later).
bool fp8_capable() {
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor >= 89;
}

std::string dims(std::initializer_list<int64_t> d) {
  std::string s;
  for (int64_t x : d) s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

// FP8 (bf16 runs, compute capability 8.9+, M and C multiples of 16 as the FP8 GEMMs need): the
// quantise of x alone, with and without its transpose, then the whole FP8 linear (quantises and
// GEMMs) at the MLP's two shapes, to set beside the bf16 linear rows. Scales 1: inputs in [-1, 1].
void bench_fp8(Bench& bench, int64_t M, int64_t C) {
  using T = nd::bf16;
  const DType dt = DType::BF16;
  const double es = 2;
  struct LinearShape {
    const char* name;
    int64_t N, K;
  };
  Tensor scalars = Tensor::from_vector(std::vector<float>(12, 1.0f), {12}).to(Device::cuda(0));
  float* sc = scalars.data<float>();
  const Fp8ScaleSlot xs{sc + 1, sc + 2, sc}, ws{sc + 5, sc + 6, sc + 4}, ds{sc + 9, sc + 10, sc + 8};
  for (LinearShape ls : {LinearShape{"fc", 4 * C, C}, LinearShape{"fc proj", C, 4 * C}}) {
    const double mk = static_cast<double>(M) * ls.K, nk = static_cast<double>(ls.N) * ls.K,
                 mn = static_cast<double>(M) * ls.N;
    Tensor x = bench.random({M, ls.K}, dt), w = bench.random({ls.N, ls.K}, dt, 0.05f), b = bench.random({ls.N}, dt);
    Tensor dout = bench.random({M, ls.N}, dt, 0.01f), out = Tensor::empty({M, ls.N}, dt, Device::cuda(0));
    Tensor dx = bench.random({M, ls.K}, dt), dw = bench.random({ls.N, ls.K}, dt), db = bench.random({ls.N}, dt);
    auto bytes = [](int64_t n) { return Tensor::empty({(n + 3) / 4}, DType::I32, Device::cuda(0)); };
    auto u8 = [](Tensor& t) { return static_cast<uint8_t*>(t.raw_data()); };
    Tensor cx = bytes(M * ls.K), cxt = bytes(M * ls.K), cw = bytes(ls.N * ls.K), cwt = bytes(ls.N * ls.K);
    Tensor cd = bytes(M * ls.N), cdt = bytes(M * ls.N);
    double s = bench.time([&] {
      fp8_quantize_transpose(x.data<T>(), M, ls.K, xs.scale, Fp8Format::E4M3, u8(cx), nullptr, xs.amax, xs.scale_inv,
                             nullptr);
    });
    bench.report("fp8 quantise", dims({M, ls.K}), s, 3.0 * mk, 0);
    s = bench.time([&] {
      fp8_quantize_transpose(x.data<T>(), M, ls.K, xs.scale, Fp8Format::E4M3, u8(cx), u8(cxt), xs.amax,
                             xs.scale_inv, nullptr);
    });
    bench.report("fp8 quantise+transpose", dims({M, ls.K}), s, 4.0 * mk, 0);
    if (ls.K == 4 * C) {
      // The MLP's GELU fused into c_proj's input quantise, and its gradient into c_fc's output-
      // gradient quantise with the bias sums (ops::fp8_gelu_mlp); against "gelu fwd" / "gelu bwd"
      // plus the row above (and the bias sum inside "fp8 linear fc bwd").
      Tensor fc_db = bench.random({ls.K}, dt);
      s = bench.time([&] {
        fp8_gelu_quantize_transpose(x.data<T>(), M, ls.K, xs.scale, Fp8Format::E4M3, u8(cx), u8(cxt), xs.amax,
                                    xs.scale_inv, nullptr);
      });
      bench.report("fp8 gelu+quantise+transpose", dims({M, ls.K}), s, 4.0 * mk, 0);
      s = bench.time([&] {
        fp8_dgelu_quantize_transpose(dx.data<T>(), x.data<T>(), M, ls.K, ds.scale, Fp8Format::E5M2, u8(cx), u8(cxt),
                                     ds.amax, ds.scale_inv, GradDest<T>{fc_db.data<T>(), true}, nullptr);
      });
      bench.report("fp8 dgelu+quantise+transpose+bias", dims({M, ls.K}), s, 6.0 * mk, 0);
    }
    const Fp8LinearBuffers buf{u8(cx), u8(cxt), u8(cw), u8(cwt), u8(cd), u8(cdt)};
    const double flops = 2.0 * M * ls.N * ls.K;
    s = bench.time([&] {
      fp8_linear_forward(x.data<T>(), w.data<T>(), b.data<T>(), out.data<T>(), M, ls.N, ls.K, xs, ws, buf);
    });
    bench.report("fp8 linear " + std::string(ls.name) + " fwd", dims({M, ls.K, ls.N}), s, es * (mk + nk + mn), flops);
    s = bench.time([&] {
      fp8_linear_backward(dout.data<T>(), GradDest<T>{dx.data<T>(), true}, GradDest<T>{dw.data<T>(), true},
                          GradDest<T>{db.data<T>(), true}, M, ls.N, ls.K, xs, ws, ds, buf);
    });
    bench.report("fp8 linear " + std::string(ls.name) + " bwd", dims({M, ls.K, ls.N}), s,
                 es * (2.0 * mn + 2.0 * mk + 2.0 * nk), 2 * flops);
  }
}

template <typename T>
void run_all(Bench& bench, int64_t B, int64_t T_len, int64_t C, int64_t NH, int64_t V) {
  const DType dt = dtype_of<T>::value;
  const double es = sizeof(T);
  const int64_t M = B * T_len, Vp = (V + 127) / 128 * 128;

  // Ceilings measured here: a device copy and a large GEMM.
  {
    int64_t n = int64_t{1} << 28;  // 512 MiB of bf16 or 1 GiB of f32
    Tensor a = bench.random({n}, dt), b = bench.random({n}, dt);
    double s = bench.time([&] {
      CUDA_CHECK(cudaMemcpyAsync(b.raw_data(), a.raw_data(), a.nbytes(), cudaMemcpyDeviceToDevice, compute_stream()));
    });
    bench.report("copy (ceiling)", dims({n}), s, 2.0 * a.nbytes(), 0);
    int64_t g = 8192;
    Tensor x = bench.random({g, g}, dt), w = bench.random({g, g}, dt), o = Tensor::empty({g, g}, dt, Device::cuda(0));
    s = bench.time(
        [&] { linear_forward(x.data<T>(), w.data<T>(), static_cast<const T*>(nullptr), o.data<T>(), g, g, g); });
    bench.report("gemm (ceiling)", dims({g, g, g}), s, 3.0 * g * g * es, 2.0 * g * g * g);
  }

  struct LinearShape {
    const char* name;
    int64_t N, K;
    bool bias;
  };
  for (LinearShape ls : {LinearShape{"linear qkv", 3 * C, C, true}, LinearShape{"linear attn proj", C, C, true},
                         LinearShape{"linear fc", 4 * C, C, true}, LinearShape{"linear fc proj", C, 4 * C, true},
                         LinearShape{"linear lm_head", Vp, C, false}}) {
    Tensor x = bench.random({M, ls.K}, dt), w = bench.random({ls.N, ls.K}, dt, 0.05f), b = bench.random({ls.N}, dt);
    Tensor out = Tensor::empty({M, ls.N}, dt, Device::cuda(0));
    Tensor dout = bench.random({M, ls.N}, dt, 0.01f), dx = bench.random({M, ls.K}, dt);
    Tensor dw = bench.random({ls.N, ls.K}, dt), db = bench.random({ls.N}, dt);
    const T* bias = ls.bias ? b.data<T>() : nullptr;
    double flops = 2.0 * M * ls.N * ls.K;
    double s = bench.time([&] { linear_forward(x.data<T>(), w.data<T>(), bias, out.data<T>(), M, ls.N, ls.K); });
    bench.report(std::string(ls.name) + " fwd", dims({M, ls.K, ls.N}), s, es * (M * ls.K + ls.N * ls.K + M * ls.N),
                 flops);
    s = bench.time([&] {
      linear_backward(dout.data<T>(), x.data<T>(), w.data<T>(), GradDest<T>{dx.data<T>(), true},
                      GradDest<T>{dw.data<T>(), true}, GradDest<T>{ls.bias ? db.data<T>() : nullptr, true}, M, ls.N,
                      ls.K);
    });
    bench.report(std::string(ls.name) + " bwd", dims({M, ls.K, ls.N}), s,
                 es * (2.0 * M * ls.N + 3.0 * M * ls.K + 3.0 * ls.N * ls.K), 2 * flops);
  }

  if constexpr (std::is_same_v<T, nd::bf16>) {
    if (fp8_capable() && M % 16 == 0 && C % 16 == 0) bench_fp8(bench, M, C);
  }

  {
    Tensor x = bench.random({M, C}, dt), w = bench.random({C}, dt), b = bench.random({C}, dt);
    Tensor out = Tensor::empty({M, C}, dt, Device::cuda(0));
    Tensor mean = Tensor::empty({M}, DType::F32, Device::cuda(0)),
           rstd = Tensor::empty({M}, DType::F32, Device::cuda(0));
    Tensor dout = bench.random({M, C}, dt), dx = bench.random({M, C}, dt), dw = bench.random({C}, dt),
           db = bench.random({C}, dt);
    double s = bench.time([&] {
      layernorm_forward(x.data<T>(), w.data<T>(), b.data<T>(), out.data<T>(), mean.data<float>(), rstd.data<float>(), M,
                        C, 1e-5f);
    });
    bench.report("layernorm fwd", dims({M, C}), s, 2.0 * es * M * C, 0);
    s = bench.time([&] {
      layernorm_backward(dout.data<T>(), x.data<T>(), w.data<T>(), mean.data<float>(), rstd.data<float>(),
                         GradDest<T>{dx.data<T>(), true}, GradDest<T>{dw.data<T>(), true},
                         GradDest<T>{db.data<T>(), true}, M, C);
    });
    bench.report("layernorm bwd", dims({M, C}), s, 4.0 * es * M * C, 0);
  }

  {
    // The MLP's GELU in the fc GEMM's epilogue (ops::gelu_mlp), against "linear fc fwd" + "gelu fwd";
    // and the backward's dx product, GELU gradient and fc bias column sum (separate kernels).
    const int64_t H = 4 * C;
    Tensor x = bench.random({M, C}, dt), w = bench.random({H, C}, dt, 0.05f), b = bench.random({H}, dt);
    Tensor pre = Tensor::empty({M, H}, dt, Device::cuda(0)), out = Tensor::empty({M, H}, dt, Device::cuda(0));
    Tensor dout = bench.random({M, C}, dt, 0.01f), w2 = bench.random({C, H}, dt, 0.05f);
    Tensor dpre = Tensor::empty({M, H}, dt, Device::cuda(0)), db = bench.random({H}, dt);
    const double flops = 2.0 * M * H * C;
    bool fused = false;
    double s = bench.time([&] {
      fused = linear_gelu_forward(x.data<T>(), w.data<T>(), b.data<T>(), out.data<T>(), pre.data<T>(), M, H, C);
    });
    bench.report(std::string("linear fc+gelu fwd") + (fused ? " (epilogue)" : " (separate)"), dims({M, C, H}), s,
                 es * (M * C + H * C + 2.0 * M * H), flops);
    s = bench.time([&] {
      linear_dgelu_backward(dout.data<T>(), w2.data<T>(), pre.data<T>(), dpre.data<T>(),
                            GradDest<T>{db.data<T>(), false}, M, C, H);
    });
    bench.report("linear fc proj dx+dgelu bwd", dims({M, H, C}), s, es * (M * C + C * H + 2.0 * M * H), flops);
  }

  {
    int64_t n = M * 4 * C;
    Tensor x = bench.random({n}, dt, 3.0f), out = Tensor::empty({n}, dt, Device::cuda(0));
    Tensor dout = bench.random({n}, dt), dx = bench.random({n}, dt);
    double s = bench.time([&] { gelu_forward(x.data<T>(), out.data<T>(), n); });
    bench.report("gelu fwd", dims({M, 4 * C}), s, 2.0 * es * n, 0);
    s = bench.time([&] { gelu_backward(x.data<T>(), dout.data<T>(), GradDest<T>{dx.data<T>(), true}, n); });
    bench.report("gelu bwd", dims({M, 4 * C}), s, 4.0 * es * n, 0);
    int64_t r = M * C;
    s = bench.time([&] { add_forward(x.data<T>(), dout.data<T>(), out.data<T>(), r); });
    bench.report("add fwd", dims({M, C}), s, 3.0 * es * r, 0);
    s = bench.time([&] { add_backward(dout.data<T>(), GradDest<T>{dx.data<T>(), true}, GradDest<T>{}, r); });
    bench.report("add bwd (accumulate)", dims({M, C}), s, 3.0 * es * r, 0);
    s = bench.time([&] { dropout_forward(x.data<T>(), out.data<T>(), r, 0.1f, PhiloxCounters{1, 0, 0}); });
    bench.report("dropout fwd", dims({M, C}), s, 2.0 * es * r, 0);
  }

  {
    Tensor idx = bench.ids({B, T_len}, V);
    Tensor wte = bench.random({Vp, C}, dt), wpe = bench.random({T_len, C}, dt),
           out = Tensor::empty({M, C}, dt, Device::cuda(0));
    Tensor dout = bench.random({M, C}, dt), dwte = bench.random({Vp, C}, dt), dwpe = bench.random({T_len, C}, dt);
    double s = bench.time(
        [&] { embedding_forward(idx.data<int32_t>(), wte.data<T>(), wpe.data<T>(), out.data<T>(), B, T_len, C, Vp); });
    bench.report("embedding fwd", dims({B, T_len, C}), s, es * (3.0 * M * C), 0);
    s = bench.time([&] {
      embedding_backward(idx.data<int32_t>(), dout.data<T>(), GradDest<T>{dwte.data<T>(), true},
                         GradDest<T>{dwpe.data<T>(), true}, B, T_len, C, Vp, T_len);
    });
    bench.report("embedding bwd", dims({B, T_len, C}), s, es * (3.0 * M * C), 0);
  }

  {
    Tensor qkv = bench.random({B, T_len, 3 * C}, dt), out = Tensor::empty({B, T_len, C}, dt, Device::cuda(0));
    Tensor lse = Tensor::empty({B, NH, T_len}, DType::F32, Device::cuda(0));
    Tensor dout = bench.random({B, T_len, C}, dt), dqkv = bench.random({B, T_len, 3 * C}, dt);
    double flops = 2.0 * B * NH * T_len * T_len * (C / NH);  // causal: half of 4 B NH T^2 hs
    // The tensor-core forward's tiling variants (bf16 only; the default, 0, last).
    const bool mma = dt == DType::BF16 && detail::attention_mma_supports(C / NH);
    int variants = mma ? detail::attention_forward_variant_count() : 1;
    for (int v = variants - 1; v >= 0; --v) {
      double s = bench.time([&] {
        if constexpr (std::is_same<T, nd::bf16>::value) {
          if (mma) {
            detail::attention_forward_mma(qkv.data<T>(), out.data<T>(), lse.data<float>(), B, T_len, C, NH, {},
                                          compute_stream(), v);
            return;
          }
        }
        attention_forward(qkv.data<T>(), out.data<T>(), lse.data<float>(), B, T_len, C, NH);
      });
      bench.report("attention fwd v" + std::to_string(v), dims({B, T_len, NH, C / NH}), s, es * 4.0 * M * C, flops);
    }
    double s = bench.time([&] {
      attention_backward(dout.data<T>(), qkv.data<T>(), out.data<T>(), lse.data<float>(),
                         GradDest<T>{dqkv.data<T>(), true}, B, T_len, C, NH);
    });
    bench.report("attention bwd", dims({B, T_len, NH, C / NH}), s, es * 11.0 * M * C, 2.5 * flops);
    // With dropout on the probabilities: one Philox draw per unmasked element, in each kernel.
    const AttentionDropout drop{0.1f, 1234, 0, 5};
    s = bench.time(
        [&] { attention_forward(qkv.data<T>(), out.data<T>(), lse.data<float>(), B, T_len, C, NH, drop); });
    bench.report("attention fwd dropout", dims({B, T_len, NH, C / NH}), s, es * 4.0 * M * C, flops);
    s = bench.time([&] {
      attention_backward(dout.data<T>(), qkv.data<T>(), out.data<T>(), lse.data<float>(),
                         GradDest<T>{dqkv.data<T>(), true}, B, T_len, C, NH, drop);
    });
    bench.report("attention bwd dropout", dims({B, T_len, NH, C / NH}), s, es * 11.0 * M * C, 2.5 * flops);
    // cuDNN's fused attention on the same tensors (bf16, where this build and GPU have it); its
    // backward overwrites dqkv, as the training step's does.
    if constexpr (std::is_same<T, nd::bf16>::value) {
      if (cudnn::attention_available()) {
        for (const AttentionDropout& d : {AttentionDropout{}, drop}) {
          const std::string suffix = d.active() ? " dropout" : "";
          s = bench.time(
              [&] { cudnn::attention_forward(qkv.data<T>(), out.data<T>(), lse.data<float>(), B, T_len, C, NH, d); });
          bench.report("cudnn attn fwd" + suffix, dims({B, T_len, NH, C / NH}), s, es * 4.0 * M * C, flops);
          s = bench.time([&] {
            cudnn::attention_backward(dout.data<T>(), qkv.data<T>(), out.data<T>(), lse.data<float>(),
                                      GradDest<T>{dqkv.data<T>(), false}, B, T_len, C, NH, d);
          });
          bench.report("cudnn attn bwd" + suffix, dims({B, T_len, NH, C / NH}), s, es * 11.0 * M * C, 2.5 * flops);
        }
      }
    }
  }

  {
    Tensor logits = bench.random({M, Vp}, dt, 4.0f), targets = bench.ids({M}, V);
    // The loss and its seed are f32 whatever the logits' type.
    Tensor loss = Tensor::empty({1}, DType::F32, Device::cuda(0)), dloss = bench.random({1}, DType::F32);
    Tensor lse = Tensor::empty({M + 1}, DType::F32, Device::cuda(0)), dlogits = bench.random({M, Vp}, dt, 0.01f);
    double s = bench.time([&] {
      cross_entropy_forward(logits.data<T>(), targets.data<int32_t>(), loss.data<float>(), lse.data<float>(),
                            lse.data<float>() + M, M, Vp, V);
    });
    bench.report("cross_entropy fwd", dims({M, Vp}), s, es * M * Vp, 0);
    s = bench.time([&] {
      cross_entropy_backward(logits.data<T>(), targets.data<int32_t>(), lse.data<float>(), lse.data<float>() + M,
                             dloss.data<float>(), GradDest<T>{dlogits.data<T>(), true}, M, Vp, V);
    });
    bench.report("cross_entropy bwd", dims({M, Vp}), s, es * 3.0 * M * Vp, 0);
    s = bench.time([&] {
      cross_entropy_backward(logits.data<T>(), targets.data<int32_t>(), lse.data<float>(), lse.data<float>() + M,
                             dloss.data<float>(), GradDest<T>{dlogits.data<T>(), false}, M, Vp, V);
    });
    bench.report("cross_entropy bwd (new)", dims({M, Vp}), s, es * 2.0 * M * Vp, 0);
    // The cross_entropy_grad fusion: the forward writes dlogits (a fresh buffer, then over the
    // logits, which is why it runs last: the logits hold gradients after it).
    s = bench.time([&] {
      cross_entropy_forward_with_grad(logits.data<T>(), targets.data<int32_t>(), dloss.data<float>(),
                                      loss.data<float>(), lse.data<float>(), lse.data<float>() + M, dlogits.data<T>(),
                                      M, Vp, V);
    });
    bench.report("cross_entropy fwd+grad", dims({M, Vp}), s, es * 2.0 * M * Vp, 0);
    s = bench.time([&] {
      cross_entropy_forward_with_grad(logits.data<T>(), targets.data<int32_t>(), dloss.data<float>(),
                                      loss.data<float>(), lse.data<float>(), lse.data<float>() + M, logits.data<T>(),
                                      M, Vp, V);
    });
    bench.report("cross_entropy fwd+grad (in place)", dims({M, Vp}), s, es * 2.0 * M * Vp, 0);
  }

  {
    // GPT-2's parameter list: embeddings, 12 blocks of 12 tensors, the final layer norm.
    std::vector<Shape> shapes = {{Vp, C}, {T_len, C}};
    for (int l = 0; l < 12; ++l)
      for (Shape s : {Shape{C}, Shape{C}, Shape{3 * C, C}, Shape{3 * C}, Shape{C, C}, Shape{C}, Shape{C}, Shape{C},
                      Shape{4 * C, C}, Shape{4 * C}, Shape{C, 4 * C}, Shape{C}})
        shapes.push_back(s);
    shapes.push_back({C});
    shapes.push_back({C});
    std::vector<Tensor> keep;
    std::vector<AdamWSlot<T>> slots;
    std::vector<NormSlot<T>> norms;
    int64_t total = 0;
    for (const Shape& s : shapes) {
      Tensor p = bench.random(s, dt), g = bench.random(s, dt, 0.01f), master = bench.random(s, DType::F32);
      Tensor m = bench.random(s, DType::F32, 0.01f), v = bench.uniform(s, DType::F32, 1e-6f, 1e-4f);
      int64_t n = p.numel();
      total += n;
      slots.push_back({p.data<T>(), g.data<T>(), dt == DType::F32 ? nullptr : master.data<float>(), m.data<float>(),
                       v.data<float>(), n, s.size() == 2 ? 0.1f : 0.0f});
      norms.push_back({g.data<T>(), n});
      for (Tensor t : {p, g, master, m, v}) keep.push_back(t);
    }
    DeviceSlots<AdamWSlot<T>> dev_slots(slots, current_cuda_device());
    DeviceSlots<NormSlot<T>> dev_norms(norms, current_cuda_device());
    Tensor norm = Tensor::empty({2}, DType::F32, Device::cuda(0));
    double s = bench.time([&] { global_norm(dev_norms, norm.data<float>(), norm.data<float>() + 1, 1.0f); });
    bench.report("global_norm", dims({total}), s, es * total, 0);
    int64_t step = 1;
    s = bench.time([&] { adamw_update(dev_slots, {1e-4f, 0.9f, 0.95f, 1e-8f, 0.0f, step++}, norm.data<float>() + 1); });
    double bytes_per = dt == DType::F32 ? 4.0 * 7 : 2.0 * 3 + 4.0 * 6;
    bench.report("adamw", dims({total}) + " " + std::to_string(shapes.size()) + "t", s, bytes_per * total, 0);
  }
}

}  // namespace

std::vector<KernelBenchRow> run_bench_kernels(const KernelBenchOptions& options,
                                              const std::function<void(const KernelBenchRow&)>& on_row) {
  ND_CHECK(options.dtype == DType::BF16 || options.dtype == DType::F32,
           "run_bench_kernels: dtype must be bf16 or f32, got " << dtype_name(options.dtype));
  ND_CHECK(options.batch > 0 && options.seq > 0 && options.embd > 0 && options.heads > 0 && options.vocab > 0 &&
               options.iters > 0,
           "run_bench_kernels: shapes and iters must be positive");
  ND_CHECK(cuda_available(), "run_bench_kernels: no CUDA device");
  Bench bench;
  bench.iters = options.iters;
  bench.on_row = on_row;
  if (options.dtype == DType::BF16) {
    run_all<nd::bf16>(bench, options.batch, options.seq, options.embd, options.heads, options.vocab);
  } else {
    run_all<float>(bench, options.batch, options.seq, options.embd, options.heads, options.vocab);
  }
  return bench.rows;
}

}  // namespace nd::cuda
