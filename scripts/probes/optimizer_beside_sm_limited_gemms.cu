// A probe for one GPU, outside the build (docs/PERFORMANCE.md, "FSDP2's clocks, GEMMs at the power
// cap, and the pinned snapshot"): can ZeRO 3's AdamW hide behind the next step's forward if the
// GEMMs leave it some SMs? optimizer_beside_gemms.cu found the two sharing the SMs by time (both
// at once took their sum), with every GEMM on every SM and on zeros (which never meets the power
// limit). Here the forward GEMMs of the 6.7B GPT (32 blocks of qkv, projection, c_fc and c_proj at
// 2,048 tokens, cuBLASLt's first choice) run on random data, so at the power limit, and are asked
// to use S SMs (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET); the update of a 3.33B-parameter shard (32
// launches over 104M elements: f32 gradient, master, m and v, a bf16 copy) runs beside them as one
// 1024-thread block per remaining SM (each block asks for enough shared memory to hold an SM alone).
// For each S: the forward alone, the update alone, both at once, and the energy of each (NVML).
// Gain = (forward on every SM + update on every SM, one after the other) - both at once.
// Build and run: nvcc -O3 -arch=sm_90 optimizer_beside_sm_limited_gemms.cu -lcublasLt -ldl -o /tmp/p && /tmp/p
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto e_ = (x); if (int(e_) != 0) { std::printf("%s failed: %d (line %d)\n", #x, int(e_), __LINE__); std::exit(1); } } while (0)

// NVML through dlopen: the energy counter (mJ), so that no header or link flag is needed.
typedef void* nvmlDevice_t;
static int (*nvml_energy)(nvmlDevice_t, unsigned long long*);
static nvmlDevice_t nvml_dev;
static bool load_nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) return false;
  auto init = (int (*)())dlsym(lib, "nvmlInit_v2");
  auto handle = (int (*)(unsigned, nvmlDevice_t*))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  nvml_energy = (int (*)(nvmlDevice_t, unsigned long long*))dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption");
  return init && handle && nvml_energy && init() == 0 && handle(0, &nvml_dev) == 0;
}
static double joules() { unsigned long long e = 0; if (nvml_energy) nvml_energy(nvml_dev, &e); return e * 1e-3; }

__global__ void fill(unsigned short* p, size_t n, unsigned seed) {  // bf16 in ~[0.0078, 0.0156), random signs
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u + seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = 0x3c00 | (x & 0x7f) | ((x >> 8) & 0x8000);
  }
}

// AdamW's memory traffic, four packs in flight a thread (a block holds an SM alone: few threads).
__global__ void __launch_bounds__(1024) adamw(__nv_bfloat16* __restrict__ p, const float* __restrict__ g,
                                              float* __restrict__ w, float* __restrict__ m, float* __restrict__ v,
                                              size_t n4) {
  constexpr int kUnroll = 4;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t base = blockIdx.x * size_t(blockDim.x) + threadIdx.x; base < n4; base += stride * kUnroll) {
    float4 gg[kUnroll], ww[kUnroll], mm[kUnroll], vv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * stride;
      if (i < n4) {
        gg[u] = reinterpret_cast<const float4*>(g)[i]; ww[u] = reinterpret_cast<float4*>(w)[i];
        mm[u] = reinterpret_cast<float4*>(m)[i]; vv[u] = reinterpret_cast<float4*>(v)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + u * stride;
      if (i >= n4) continue;
      float* G = &gg[u].x; float* W = &ww[u].x; float* M = &mm[u].x; float* V = &vv[u].x;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        M[k] = 0.9f * M[k] + 0.1f * G[k];
        V[k] = 0.99f * V[k] + 0.01f * G[k] * G[k];
        W[k] -= 1e-4f * (M[k] / (sqrtf(V[k]) + 1e-8f) + 0.1f * W[k]);
      }
      reinterpret_cast<float4*>(w)[i] = ww[u]; reinterpret_cast<float4*>(m)[i] = mm[u]; reinterpret_cast<float4*>(v)[i] = vv[u];
      reinterpret_cast<__nv_bfloat162*>(p)[2 * i] = __floats2bfloat162_rn(W[0], W[1]);
      reinterpret_cast<__nv_bfloat162*>(p)[2 * i + 1] = __floats2bfloat162_rn(W[2], W[3]);
    }
  }
}

struct Gemm {  // y (tokens, n) = x (tokens, k) . w (n, k)^T, as nanodist's linear runs it
  int n, k;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
};

int main() {
  CK(cudaSetDevice(0));
  if (!load_nvml()) std::printf("(no NVML: energies read 0)\n");
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  constexpr int kTokens = 2048, kWidth = 4096;
  const size_t n = 104u << 20;  // a block's shard: 201M parameters over 2 ranks
  __nv_bfloat16* p; float *g, *w, *m, *v;
  CK(cudaMalloc(&p, n * 2)); CK(cudaMalloc(&g, n * 4)); CK(cudaMalloc(&w, n * 4)); CK(cudaMalloc(&m, n * 4)); CK(cudaMalloc(&v, n * 4));
  for (float* f : {g, w, m, v}) CK(cudaMemset(f, 0, n * 4));
  void *x, *wt, *y, *ws; const size_t wsb = 32 << 20;
  CK(cudaMalloc(&x, size_t(kTokens) * 4 * kWidth * 2)); CK(cudaMalloc(&wt, size_t(4 * kWidth) * kWidth * 2));
  CK(cudaMalloc(&y, size_t(kTokens) * 4 * kWidth * 2)); CK(cudaMalloc(&ws, wsb));
  fill<<<1024, 256>>>(static_cast<unsigned short*>(x), size_t(kTokens) * 4 * kWidth, 1);
  fill<<<1024, 256>>>(static_cast<unsigned short*>(wt), size_t(4 * kWidth) * kWidth, 7);
  CK(cudaDeviceSynchronize());
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cudaStream_t sg, su;
  CK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&su, cudaStreamNonBlocking));
  const float one = 1, zero = 0;

  // The four GEMMs of a block, planned for a target of `target` SMs (0: all).
  auto plan = [&](int target) {
    std::vector<Gemm> gemms;
    for (auto [nn, kk] : std::vector<std::pair<int, int>>{{3 * kWidth, kWidth}, {kWidth, kWidth}, {4 * kWidth, kWidth}, {kWidth, 4 * kWidth}}) {
      Gemm q{nn, kk};
      CK(cublasLtMatmulDescCreate(&q.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      CK(cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      CK(cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
      if (target > 0) CK(cublasLtMatmulDescSetAttribute(q.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &target, sizeof target));
      CK(cublasLtMatrixLayoutCreate(&q.a, CUDA_R_16BF, kk, nn, kk));
      CK(cublasLtMatrixLayoutCreate(&q.b, CUDA_R_16BF, kk, kTokens, kk));
      CK(cublasLtMatrixLayoutCreate(&q.d, CUDA_R_16BF, nn, kTokens, nn));
      cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
      CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
      cublasLtMatmulHeuristicResult_t res; int found = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, q.op, q.a, q.b, q.d, q.d, pref, 1, &res, &found));
      if (found < 1) { std::printf("no algorithm for %d x %d\n", nn, kk); std::exit(1); }
      q.algo = res.algo;
      gemms.push_back(q);
    }
    return gemms;
  };
  auto forward = [&](const std::vector<Gemm>& gemms) {
    for (int blk = 0; blk < 32; ++blk)
      for (const Gemm& q : gemms)
        CK(cublasLtMatmul(lt, q.op, &one, wt, q.a, x, q.b, &zero, y, q.d, y, q.d, &q.algo, ws, wsb, sg));
  };
  const int smem = 160 << 10;  // more than half an SM's shared memory: one update block an SM, alone
  CK(cudaFuncSetAttribute(adamw, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  auto update = [&](int blocks, bool alone_on_sm) {
    for (int b = 0; b < 32; ++b) adamw<<<blocks, 1024, alone_on_sm ? smem : 0, su>>>(p, g, w, m, v, n / 4);
  };
  cudaEvent_t t0, tg, tu, go;
  CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&tg)); CK(cudaEventCreate(&tu)); CK(cudaEventCreate(&go));
  std::vector<Gemm> all = plan(0);
  // Each measurement: 0.3 s of GEMMs first (to the power limit), then the work; the median of 5.
  auto measure = [&](auto body, float* gemm_ms, float* update_ms, double* j) {
    std::vector<float> tot, gm, um; std::vector<double> js;
    for (int it = 0; it < 5; ++it) {
      for (int r = 0; r < 8; ++r) forward(all);
      CK(cudaEventRecord(go, sg)); CK(cudaStreamWaitEvent(su, go));
      CK(cudaEventSynchronize(go));
      const double j0 = joules();
      CK(cudaEventRecord(t0, sg)); CK(cudaStreamWaitEvent(su, t0));
      body();
      CK(cudaEventRecord(tg, sg)); CK(cudaEventRecord(tu, su));
      CK(cudaEventSynchronize(tg)); CK(cudaEventSynchronize(tu));
      const double j1 = joules();
      float a = 0, b = 0; CK(cudaEventElapsedTime(&a, t0, tg)); CK(cudaEventElapsedTime(&b, t0, tu));
      gm.push_back(a); um.push_back(b); tot.push_back(std::max(a, b)); js.push_back(j1 - j0);
    }
    auto med = [](auto vs) { std::sort(vs.begin(), vs.end()); return vs[vs.size() / 2]; };
    *gemm_ms = med(gm); *update_ms = med(um); *j = med(js);
    return med(tot);
  };
  float gms, ums; double j;
  std::printf("%d SMs; the forward: 32 blocks x 4 GEMMs; the update: 32 x 104M elements (%.1f GB)\n", sms, 32 * n * 30.0 / 1e9);
  float fwd_all = measure([&] { forward(all); }, &gms, &ums, &j);
  std::printf("forward on every SM                       %7.2f ms  %6.1f J\n", fwd_all, j);
  float upd_all = measure([&] { update(sms * 2, false); }, &gms, &ums, &j);
  std::printf("update on every SM                        %7.2f ms  %6.1f J  (%.0f GB/s)\n", upd_all, j, 32 * n * 30.0 / upd_all / 1e6);
  std::printf("one after the other                       %7.2f ms\n", fwd_all + upd_all);
  for (int left : {4, 8, 16, 24, 32, 48}) {
    const int target = sms - left;
    std::vector<Gemm> limited = plan(target);
    float f = measure([&] { forward(limited); }, &gms, &ums, &j);
    std::printf("S=%3d: forward alone %7.2f ms %6.1f J;", target, f, j);
    float u = measure([&] { update(left, true); }, &gms, &ums, &j);
    std::printf(" update alone on %2d SMs %7.2f ms (%4.0f GB/s);", left, u, 32 * n * 30.0 / u / 1e6);
    float both = measure([&] { update(left, true); forward(limited); }, &gms, &ums, &j);
    std::printf(" both %7.2f ms (forward done %7.2f, update %7.2f) %6.1f J; gain %+6.2f ms\n", both, gms, ums, j,
                fwd_all + upd_all - both);
  }
  return 0;
}
