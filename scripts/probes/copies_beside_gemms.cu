// A probe for one GPU, outside the build (docs/PERFORMANCE.md, "What a ZeRO 3 step is made of"):
// how much do the SM-side pieces of the copy-engine all-gather (copies out of the slots, 16 MB
// each, and the local copy of the rank's own 201 MB, per 6.7B block) slow the forward GEMMs
// beside them, by the copy's form: cudaMemcpyAsync, a kernel of one 16-byte load a thread, or a
// grid-stride kernel capped at a few blocks. GEMMs on a default-priority stream, copies on a
// high-priority one, as nanodist's comm streams.
// Build and run: nvcc -O3 -arch=sm_90 copies_beside_gemms.cu -lcublas -o /tmp/p && /tmp/p
#include "forward_gemms.cuh"
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

__global__ void copy_stride(uint4* __restrict__ d, const uint4* __restrict__ s, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v0 = s[i], v1 = s[i + stride], v2 = s[i + 2 * stride], v3 = s[i + 3 * stride];
    d[i] = v0; d[i + stride] = v1; d[i + 2 * stride] = v2; d[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) d[i] = s[i];
}
__global__ void copy_flat(uint4* __restrict__ d, const uint4* __restrict__ s, size_t n) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) d[i] = s[i];
}

int main() {
  CK(cudaSetDevice(0));
  int sms = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t piece = 16u << 20, own = 201u << 20;
  char *src, *dst;
  CK(cudaMalloc(&src, 13 * piece)); CK(cudaMalloc(&dst, 13 * piece)); CK(cudaMemset(src, 1, 13 * piece));
  int lo = 0, hi = 0; CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t sg, sc;
  CK(cudaStreamCreateWithPriority(&sg, cudaStreamNonBlocking, lo));
  CK(cudaStreamCreateWithPriority(&sc, cudaStreamNonBlocking, hi));
  ForwardGemms gemms(sg);
  auto forward = [&] { gemms.enqueue(); };
  using Copy = std::function<void(char*, const char*, size_t)>;
  auto copies = [&](const Copy& c) {  // a block's gather: 13 pieces out of slots, then its own shard
    for (int b = 0; b < 32; ++b) {
      for (int p = 0; p < 13; ++p) c(dst + p * piece, src + p * piece, piece);
      c(dst, src, own);
    }
  };
  cudaEvent_t t0, g1, c1;
  CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&g1)); CK(cudaEventCreate(&c1));
  auto run = [&](const char* name, bool gemm, const Copy* c) {
    float bg = 1e9, bc = 1e9;
    for (int it = 0; it < 5; ++it) {
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(t0, sg)); CK(cudaStreamWaitEvent(sc, t0));
      if (c) copies(*c);
      if (gemm) forward();
      CK(cudaEventRecord(g1, sg)); CK(cudaEventRecord(c1, sc));
      CK(cudaDeviceSynchronize());
      float a = 0, b = 0; CK(cudaEventElapsedTime(&a, t0, g1)); CK(cudaEventElapsedTime(&b, t0, c1));
      if (it > 0) { if (a < bg) bg = a; if (b < bc) bc = b; }
    }
    std::printf("  %-44s gemm stream %8.2f ms   copy stream %8.2f ms\n", name, gemm ? bg : 0.f, c ? bc : 0.f);
  };
  std::printf("%d SMs\n", sms);
  run("GEMMs alone", true, nullptr);
  Copy memcpy_copy = [&](char* d, const char* s, size_t n) { CK(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, sc)); };
  Copy flat = [&](char* d, const char* s, size_t n) { copy_flat<<<unsigned((n / 16 + 255) / 256), 256, 0, sc>>>((uint4*)d, (const uint4*)s, n / 16); };
  std::vector<std::pair<std::string, Copy>> forms = {{"cudaMemcpyAsync", memcpy_copy}, {"flat kernel (one uint4 a thread)", flat}};
  for (int b : {64, 32, 16, 8}) {
    forms.push_back({"grid-stride " + std::to_string(b) + " x 1024", [&, b](char* d, const char* s, size_t n) {
                       copy_stride<<<b, 1024, 0, sc>>>((uint4*)d, (const uint4*)s, n / 16); }});
    forms.push_back({"grid-stride " + std::to_string(b) + " x 256", [&, b](char* d, const char* s, size_t n) {
                       copy_stride<<<b, 256, 0, sc>>>((uint4*)d, (const uint4*)s, n / 16); }});
  }
  for (auto& f : forms) {
    std::printf("%s\n", f.first.c_str());
    run("  copies alone", false, &f.second);
    run("  both", true, &f.second);
  }
  return 0;
}
