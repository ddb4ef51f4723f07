// A probe for 2 or more GPUs of one node, outside the build: can NCCL itself move sequence parallelism's all-gathers on the copy
// engines? Its collective kernels need SMs, and beside the GEMMs (persistent kernels that hold every
// SM) they wait, which is why tp 2 over NCCL makes 1.27x tp 1 with sequence parallelism against
// 1.52x over nanodist's copy-engine collectives. NCCL 2.28 has a communicator CTA policy,
// NCCL_CTA_POLICY_ZERO ("zero CTAs whenever it can"), for buffers registered as symmetric windows
// (ncclMemAlloc + ncclCommWindowRegister). Whether it takes the copy engines here, where NVLink
// multicast (NVLS) is off, is the question. One process drives every visible GPU; for each policy
// (default, efficiency, zero) it times all-gathers and reduce-scatters of 1, 10.5 and 64 MB wholes
// into registered windows, alone and beside the 6.7B GPT's forward GEMMs on another stream of each
// GPU (median us of 20 calls). Run it with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,REG to see
// which path NCCL logs ("Copy Engine" or a kernel). Run on 2 H200 with NCCL 2.28.3:
// no policy kept the gathers from waiting for the GEMMs (docs/benchmarks/2026-11-26-negative-nccl-settings-h200.md).
// Build and run: nvcc -O3 -arch=sm_90 nccl_zero_cta_gather.cu -lnccl -lcublas -o /tmp/p && /tmp/p
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "forward_gemms.cuh"

#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { std::printf("%s: %s\n", #x, ncclGetErrorString(r_)); std::exit(1); } } while (0)

struct Gpu {
  ncclComm_t comm = nullptr;
  cudaStream_t comm_stream = nullptr, gemm_stream = nullptr;
  void *in = nullptr, *out = nullptr;
  ncclWindow_t in_win = nullptr, out_win = nullptr;
  std::unique_ptr<ForwardGemms> gemms;
};

constexpr size_t kMaxWhole = size_t(64) << 20;

// Every GPU's communicator under `policy`, its streams (the comm stream at the top priority, as
// nanodist's), buffers from ncclMemAlloc registered as symmetric windows, and its GEMM load.
std::vector<Gpu> set_up(int n, int policy) {
  std::vector<Gpu> gpus(n);
  ncclUniqueId id;
  NK(ncclGetUniqueId(&id));
  NK(ncclGroupStart());
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.CTAPolicy = policy;
    NK(ncclCommInitRankConfig(&gpus[d].comm, n, id, d, &config));
  }
  NK(ncclGroupEnd());
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    int lo = 0, hi = 0;
    CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    CK(cudaStreamCreateWithPriority(&gpus[d].comm_stream, cudaStreamNonBlocking, hi));
    CK(cudaStreamCreateWithPriority(&gpus[d].gemm_stream, cudaStreamNonBlocking, lo));
    NK(ncclMemAlloc(&gpus[d].in, kMaxWhole));
    NK(ncclMemAlloc(&gpus[d].out, kMaxWhole));
    CK(cudaMemset(gpus[d].in, 0, kMaxWhole));
    gpus[d].gemms = std::make_unique<ForwardGemms>(gpus[d].gemm_stream);
  }
  NK(ncclGroupStart());
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    NK(ncclCommWindowRegister(gpus[d].comm, gpus[d].in, kMaxWhole, &gpus[d].in_win, NCCL_WIN_COLL_SYMMETRIC));
    NK(ncclCommWindowRegister(gpus[d].comm, gpus[d].out, kMaxWhole, &gpus[d].out_win, NCCL_WIN_COLL_SYMMETRIC));
  }
  NK(ncclGroupEnd());
  for (int d = 0; d < n; ++d) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
  return gpus;
}

void tear_down(std::vector<Gpu>& gpus) {
  for (size_t d = 0; d < gpus.size(); ++d) {
    CK(cudaSetDevice(int(d)));
    CK(cudaDeviceSynchronize());
    NK(ncclCommWindowDeregister(gpus[d].comm, gpus[d].in_win));
    NK(ncclCommWindowDeregister(gpus[d].comm, gpus[d].out_win));
    gpus[d].gemms.reset();
    NK(ncclMemFree(gpus[d].in));
    NK(ncclMemFree(gpus[d].out));
    NK(ncclCommDestroy(gpus[d].comm));
  }
}

// Median us of 20 calls of the collective on a whole of `whole` bf16 bytes, timed on GPU 0's comm
// stream; with `beside`, every GPU first queues its GEMM load on its other stream.
double time_calls(std::vector<Gpu>& gpus, bool gather, size_t whole, bool beside) {
  const int n = int(gpus.size());
  const size_t count = whole / 2 / n;  // bf16 elements of one rank's block
  if (beside)
    for (int d = 0; d < n; ++d) { CK(cudaSetDevice(d)); gpus[d].gemms->enqueue(); }
  std::vector<float> us;
  for (int call = 0; call < 20; ++call) {
    CK(cudaSetDevice(0));
    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start)); CK(cudaEventCreate(&stop));
    CK(cudaEventRecord(start, gpus[0].comm_stream));
    NK(ncclGroupStart());
    for (int d = 0; d < n; ++d) {
      CK(cudaSetDevice(d));
      if (gather)
        NK(ncclAllGather(gpus[d].in, gpus[d].out, count, ncclBfloat16, gpus[d].comm, gpus[d].comm_stream));
      else
        NK(ncclReduceScatter(gpus[d].in, gpus[d].out, count, ncclBfloat16, ncclSum, gpus[d].comm, gpus[d].comm_stream));
    }
    NK(ncclGroupEnd());
    CK(cudaSetDevice(0));
    CK(cudaEventRecord(stop, gpus[0].comm_stream));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1e3f);
    CK(cudaEventDestroy(start)); CK(cudaEventDestroy(stop));
  }
  for (int d = 0; d < n; ++d) { CK(cudaSetDevice(d)); CK(cudaDeviceSynchronize()); }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int main() {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) { std::printf("needs 2 or more GPUs, found %d\n", n); return 1; }
  int version = 0;
  NK(ncclGetVersion(&version));
  std::printf("NCCL %d on %d GPUs; NCCL_NVLS_ENABLE=%s\n", version, n, getenv("NCCL_NVLS_ENABLE") ? getenv("NCCL_NVLS_ENABLE") : "(unset)");
  const std::vector<std::pair<int, const char*>> policies = {
      {NCCL_CTA_POLICY_DEFAULT, "default"}, {NCCL_CTA_POLICY_EFFICIENCY, "efficiency"}, {NCCL_CTA_POLICY_ZERO, "zero"}};
  const std::vector<size_t> wholes = {size_t(1) << 20, size_t(21) << 19, kMaxWhole};  // 1, 10.5, 64 MB
  for (const auto& [policy, name] : policies) {
    std::vector<Gpu> gpus = set_up(n, policy);
    for (bool gather : {true, false})
      for (size_t whole : wholes) {
        time_calls(gpus, gather, whole, false);  // warm-up
        const double alone = time_calls(gpus, gather, whole, false);
        const double beside = time_calls(gpus, gather, whole, true);
        std::printf("policy %-10s %-14s %6.1f MB: alone %8.1f us, beside the GEMMs %8.1f us\n", name,
                    gather ? "all-gather" : "reduce-scatter", whole / 1048576.0, alone, beside);
      }
    tear_down(gpus);
  }
  return 0;
}
