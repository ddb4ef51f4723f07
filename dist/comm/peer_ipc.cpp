#include "dist/comm/peer_ipc.h"

#include <cstdint>
#include <cstring>

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#endif

namespace nd::dist {

bool open_peer_regions(Comm& host, void* own, std::vector<void*>& opened) {
  const int n = host.size(), r = host.rank();
  opened.assign(n, nullptr);
#if NANODIST_WITH_CUDA
  static_assert(sizeof(cudaIpcMemHandle_t) % sizeof(int64_t) == 0, "handles travel as int64 words");
  constexpr int kWords = sizeof(cudaIpcMemHandle_t) / sizeof(int64_t);
  // The region's contents (zeroed flags) must be in place before any peer can write to it.
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int64_t> handles(static_cast<size_t>(n) * kWords, 0);
  cudaIpcMemHandle_t mine;
  CUDA_CHECK(cudaIpcGetMemHandle(&mine, own));
  std::memcpy(&handles[static_cast<size_t>(r) * kWords], &mine, sizeof mine);
  host.host_allreduce(handles.data(), n * kWords, HostReduce::Sum);
  int64_t failed = 0;
  for (int q = 0; q < n && !failed; ++q) {
    if (q == r) continue;
    cudaIpcMemHandle_t theirs;
    std::memcpy(&theirs, &handles[static_cast<size_t>(q) * kWords], sizeof theirs);
    if (cudaIpcOpenMemHandle(&opened[q], theirs, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
      (void)cudaGetLastError();
      opened[q] = nullptr;
      failed = 1;
    }
  }
  host.host_allreduce(&failed, 1, HostReduce::Max);
  return failed == 0;
#else
  (void)own;
  return false;
#endif
}

void close_peer_regions(std::vector<void*>& opened) {
#if NANODIST_WITH_CUDA
  for (void* p : opened)
    if (p) cudaIpcCloseMemHandle(p);
#endif
  opened.clear();
}

}  // namespace nd::dist
