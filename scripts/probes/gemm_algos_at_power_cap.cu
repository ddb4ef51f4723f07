// A probe for one GPU, outside the build (docs/PERFORMANCE.md, "FSDP2's clocks, GEMMs at the power
// cap, and the pinned snapshot"): cuBLASLt's top N algorithms (default 8) for the twelve bf16 GEMMs
// of a 6.7B GPT block at 2,048 tokens, each run back to back for about 1 s after 0.3 s of settling,
// on random data (GEMMs of zeros draw far less power and never meet the limit): us and mJ per GEMM
// (NVML's energy counter), the power that makes, and the median SM clock. Does the heuristic's first
// choice stay the fastest when the GPU is held to its power limit?
// Build and run: nvcc -O2 -arch=sm_90 gemm_algos_at_power_cap.cu -lcublasLt -ldl -o /tmp/p && /tmp/p [N]
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e = (x); if ((int)e != 0) { std::printf("%s failed %d line %d\n", #x, (int)e, __LINE__); return; } } while (0)
// bf16 values in about [0.0078, 0.0156) with random signs and mantissas.
__global__ void fill(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u + seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = 0x3c00 | (x & 0x7f) | ((x >> 8) & 0x8000);
  }
}
struct Shape { const char* name; bool ta, tb; long m, n, k; };
// NVML through dlopen (no header needed): the energy counter (mJ since the driver loaded) and the SM clock.
typedef void* nvmlDevice_t;
int (*nvml_energy)(nvmlDevice_t, unsigned long long*); int (*nvml_clock)(nvmlDevice_t, int, unsigned*);
void* ws; size_t wsb = 32 << 20; cublasLtHandle_t h; void *A, *B, *D; nvmlDevice_t dev;
unsigned long long energy() { unsigned long long e = 0; nvml_energy(dev, &e); return e; }
unsigned sm_clock() { unsigned c = 0; nvml_clock(dev, 1, &c); return c; }
bool load_nvml() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) return false;
  auto init = (int (*)())dlsym(lib, "nvmlInit_v2");
  auto handle = (int (*)(unsigned, nvmlDevice_t*))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  nvml_energy = (int (*)(nvmlDevice_t, unsigned long long*))dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption");
  nvml_clock = (int (*)(nvmlDevice_t, int, unsigned*))dlsym(lib, "nvmlDeviceGetClockInfo");
  return init && handle && nvml_energy && nvml_clock && init() == 0 && handle(0, &dev) == 0;
}
void probe(const Shape& s, int top) {
  cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t a, b, d;
  CK(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, s.ta ? s.k : s.m, s.ta ? s.m : s.k, s.ta ? s.k : s.m));
  CK(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, s.tb ? s.n : s.k, s.tb ? s.k : s.n, s.tb ? s.n : s.k));
  CK(cublasLtMatrixLayoutCreate(&d, CUDA_R_16BF, s.m, s.n, s.m));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[16]; int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(h, op, a, b, d, d, pref, top, res, &found));
  float alpha = 1, beta = 0; cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  double fl = 2.0 * s.m * s.n * s.k;
  double first_us = 0, best_us = 1e30; int best = -1;
  for (int i = 0; i < found; ++i) {
    bool ok = true;
    for (int w = 0; w < 3 && ok; ++w) ok = cublasLtMatmul(h, op, &alpha, A, a, B, b, &beta, D, d, D, d, &res[i].algo, ws, wsb, 0) == 0;
    if (!ok) { std::printf("  #%d fails\n", i); continue; }
    // ~0.3 s to settle at the cap, then ~1 s measured
    cudaEventRecord(e0);
    for (int r = 0; r < 10; ++r) cublasLtMatmul(h, op, &alpha, A, a, B, b, &beta, D, d, D, d, &res[i].algo, ws, wsb, 0);
    cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1);
    int n_settle = std::max(10, int(300.0 / (ms / 10))), n = std::max(20, int(1000.0 / (ms / 10)));
    for (int r = 0; r < n_settle; ++r) cublasLtMatmul(h, op, &alpha, A, a, B, b, &beta, D, d, D, d, &res[i].algo, ws, wsb, 0);
    cudaDeviceSynchronize();
    unsigned long long j0 = energy();
    cudaEventRecord(e0);
    std::vector<unsigned> clocks;
    for (int r = 0; r < n; ++r) {
      cublasLtMatmul(h, op, &alpha, A, a, B, b, &beta, D, d, D, d, &res[i].algo, ws, wsb, 0);
      if (r % (n / 8 + 1) == n / 16) { cudaEventSynchronize(e0); clocks.push_back(sm_clock()); }
    }
    cudaEventRecord(e1); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1);
    unsigned long long j1 = energy();
    std::sort(clocks.begin(), clocks.end());
    double us = ms * 1e3 / n, mj = double(j1 - j0) / n;
    int tile = 0, cluster = 0, stages = 0; size_t sz;
    cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &sz);
    std::printf("  %-18s #%d tile %3d stages %3d cluster %2d: %8.1f us %5.0f TF/s %6.1f mJ %4.0f W  SM %4u MHz\n", s.name, i,
                tile, stages, cluster, us, fl / us / 1e6, mj, mj / us * 1e3, clocks.empty() ? 0 : clocks[clocks.size() / 2]);
    if (i == 0) first_us = us;
    if (us < best_us) { best_us = us; best = i; }
  }
  std::printf("%-18s %c%c m=%6ld n=%6ld k=%6ld  at the cap: first %8.1f us, best #%d %8.1f us, gain %.3fx\n", s.name,
              s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, first_us, best, best_us, first_us / best_us);
  std::fflush(stdout);
}
int main(int argc, char** argv) {
  int top = argc > 1 ? atoi(argv[1]) : 8;
  if (!load_nvml()) { std::printf("no NVML\n"); return 1; }
  cublasLtCreate(&h); cudaMalloc(&ws, wsb);
  size_t big = size_t(16384) * 16384 * 2; cudaMalloc(&A, big); cudaMalloc(&B, big); cudaMalloc(&D, big);
  fill<<<1024, 256>>>((unsigned short*)A, big / 2, 1); fill<<<1024, 256>>>((unsigned short*)B, big / 2, 7); cudaDeviceSynchronize();
  std::vector<Shape> shapes = {
    {"6.7B fc fwd", 1, 0, 16384, 2048, 4096}, {"6.7B fc dx", 0, 0, 4096, 2048, 16384}, {"6.7B fc dw", 0, 1, 4096, 16384, 2048},
    {"6.7B mlpproj fwd", 1, 0, 4096, 2048, 16384}, {"6.7B mlpproj dx", 0, 0, 16384, 2048, 4096}, {"6.7B mlpproj dw", 0, 1, 16384, 4096, 2048},
    {"6.7B qkv fwd", 1, 0, 12288, 2048, 4096}, {"6.7B qkv dx", 0, 0, 4096, 2048, 12288}, {"6.7B qkv dw", 0, 1, 4096, 12288, 2048},
    {"6.7B proj fwd", 1, 0, 4096, 2048, 4096}, {"6.7B proj dx", 0, 0, 4096, 2048, 4096}, {"6.7B proj dw", 0, 1, 4096, 4096, 2048},
  };
  for (auto& s : shapes) probe(s, top);
}
