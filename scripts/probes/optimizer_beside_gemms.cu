// A probe for one GPU, outside the build (docs/PERFORMANCE.md, "What a ZeRO 3 step is made of"):
// would ZeRO 3's AdamW, deferred into the next step's forward and run on a stream of its own,
// hide behind the forward GEMMs? Times the 6.7B GPT's forward GEMMs (32 blocks, 2,048 tokens)
// alone, an AdamW-shaped update of a 3.33B-parameter shard (32 launches: f32 gradient, master,
// m and v, a bf16 copy) alone, and both at once, for several grid sizes and stream priorities.
// Build and run: nvcc -O3 -arch=sm_90 optimizer_beside_gemms.cu -lcublas -o /tmp/p && /tmp/p
#include "forward_gemms.cuh"
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void adamw(__nv_bfloat16* __restrict__ p, const float* __restrict__ g, float* __restrict__ w,
                      float* __restrict__ m, float* __restrict__ v, size_t n4) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    float4 gg = reinterpret_cast<const float4*>(g)[i], ww = reinterpret_cast<float4*>(w)[i];
    float4 mm = reinterpret_cast<float4*>(m)[i], vv = reinterpret_cast<float4*>(v)[i];
    float* G = &gg.x; float* W = &ww.x; float* M = &mm.x; float* V = &vv.x;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      M[k] = 0.9f * M[k] + 0.1f * G[k];
      V[k] = 0.99f * V[k] + 0.01f * G[k] * G[k];
      W[k] -= 1e-4f * (M[k] / (sqrtf(V[k]) + 1e-8f) + 0.1f * W[k]);
    }
    reinterpret_cast<float4*>(w)[i] = ww; reinterpret_cast<float4*>(m)[i] = mm; reinterpret_cast<float4*>(v)[i] = vv;
    __nv_bfloat162 a = __floats2bfloat162_rn(W[0], W[1]), b = __floats2bfloat162_rn(W[2], W[3]);
    reinterpret_cast<__nv_bfloat162*>(p)[2 * i] = a; reinterpret_cast<__nv_bfloat162*>(p)[2 * i + 1] = b;
  }
}

int main() {
  CK(cudaSetDevice(0));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t n = 104u << 20;  // a block's shard: 201M params / 2 ranks
  __nv_bfloat16* p; float *g, *w, *m, *v;
  CK(cudaMalloc(&p, n * 2)); CK(cudaMalloc(&g, n * 4)); CK(cudaMalloc(&w, n * 4)); CK(cudaMalloc(&m, n * 4)); CK(cudaMalloc(&v, n * 4));
  CK(cudaMemset(g, 0, n * 4)); CK(cudaMemset(w, 0, n * 4)); CK(cudaMemset(m, 0, n * 4)); CK(cudaMemset(v, 0, n * 4));
  int lo = 0, hi = 0; CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t sg, sa, sal;
  CK(cudaStreamCreateWithPriority(&sg, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&sa, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&sal, cudaStreamNonBlocking, hi));
  ForwardGemms gemms(sg);
  auto forward = [&] { gemms.enqueue(); };
  auto optimizer = [&](cudaStream_t st, int blocks, int threads) {
    for (int b = 0; b < 32; ++b) adamw<<<blocks, threads, 0, st>>>(p, g, w, m, v, n / 4);
  };
  cudaEvent_t t0, t1, a1, g1;
  CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&t1)); CK(cudaEventCreate(&a1)); CK(cudaEventCreate(&g1));
  auto timed = [&](const char* name, auto body) {
    float best = 1e9;
    for (int it = 0; it < 5; ++it) {
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(t0, sg));
      CK(cudaStreamWaitEvent(sa, t0)); CK(cudaStreamWaitEvent(sal, t0));
      body();
      CK(cudaEventRecord(a1, sa)); CK(cudaStreamWaitEvent(sg, a1));
      CK(cudaEventRecord(g1, sal)); CK(cudaStreamWaitEvent(sg, g1));
      CK(cudaEventRecord(t1, sg)); CK(cudaEventSynchronize(t1));
      float ms = 0; CK(cudaEventElapsedTime(&ms, t0, t1));
      if (it > 0 && ms < best) best = ms;
    }
    std::printf("  %-52s %8.2f ms\n", name, best);
    return best;
  };
  std::printf("%d SMs\n", sms);
  float tg = timed("forward GEMMs alone (32 blocks)", [&] { forward(); });
  struct Grid { int blocks, threads; };
  std::vector<Grid> grids = {{sms * 4, 256}, {sms * 2, 256}, {sms, 256}, {sms / 2, 256}, {sms / 4, 256}, {sms / 2, 512}, {sms / 4, 1024}, {sms / 8, 1024}};
  for (auto gr : grids) {
    char name[128];
    std::snprintf(name, sizeof name, "AdamW alone, grid %d x %d", gr.blocks, gr.threads);
    float ta = timed(name, [&] { optimizer(sa, gr.blocks, gr.threads); });
    std::snprintf(name, sizeof name, "  both (AdamW low priority)  sum %.2f", tg + ta);
    timed(name, [&] { optimizer(sa, gr.blocks, gr.threads); forward(); });
    std::snprintf(name, sizeof name, "  both (AdamW high priority)");
    timed(name, [&] { optimizer(sal, gr.blocks, gr.threads); forward(); });
  }
  return 0;
}
