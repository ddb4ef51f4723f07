// A probe for one GPU, outside the build (docs/PERFORMANCE.md, "FSDP2's clocks, GEMMs at the power
// cap, and the pinned snapshot"): pinning G GB of host memory (default 16) for a checkpoint
// snapshot, by cudaHostAlloc and by posix_memalign on 2 MiB huge pages touched by 1, 8 and 16
// threads and then cudaHostRegister (train/ckpt/host_arena.h's way), with the device-to-host copy rate
// into each, and the host's transparent huge page settings.
// Build and run: nvcc -O2 -arch=sm_90 pinned_host_memory.cu -o /tmp/p && /tmp/p [G]
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double d2h(void* host, void* dev, size_t bytes) {
  double t = now(); cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost); return bytes / (now() - t) / 1e9;
}
int main(int argc, char** argv) {
  size_t gb = argc > 1 ? atol(argv[1]) : 16, bytes = gb << 30;
  void* dev; cudaMalloc(&dev, 4ull << 30); cudaFree(0);
  double t = now(); void* p = nullptr;
  cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  double a = now() - t;
  std::printf("cudaHostAlloc %zu GB: %.2f s (%s), D2H %.1f GB/s\n", gb, a, cudaGetErrorString(e), d2h(p, dev, 4ull << 30));
  t = now(); cudaFreeHost(p); std::printf("cudaFreeHost: %.2f s\n", now() - t);
  for (int threads : {1, 8, 16}) {
    t = now(); void* q = nullptr;
    if (posix_memalign(&q, 2 << 20, bytes)) return 1;
    madvise(q, bytes, MADV_HUGEPAGE);
    std::vector<std::thread> ws;
    for (int i = 0; i < threads; ++i)
      ws.emplace_back([=] { size_t per = bytes / threads, off = per * i; std::memset((char*)q + off, 0, i == threads - 1 ? bytes - off : per); });
    for (auto& w : ws) w.join();
    double touch = now() - t; t = now();
    e = cudaHostRegister(q, bytes, cudaHostRegisterDefault);
    double reg = now() - t;
    std::printf("huge pages, %2d threads: touch %.2f s, cudaHostRegister %.2f s (%s), total %.2f s, D2H %.1f GB/s\n", threads, touch,
                reg, cudaGetErrorString(e), touch + reg, d2h(q, dev, 4ull << 30));
    t = now(); cudaHostUnregister(q); free(q); std::printf("  unregister + free: %.2f s\n", now() - t);
  }
  if (std::system("grep -i huge /proc/meminfo | head -3; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag") != 0)
    std::printf("(no huge page settings to show)\n");
}
