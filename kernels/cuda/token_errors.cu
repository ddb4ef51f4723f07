// The per-device bad-token record: a __device__ variable (no allocation, so the first use may even
// happen inside graph capture), its address looked up once per device, and the host-side check.
#include <mutex>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/token_errors.h"

namespace nd::cuda {

namespace {

__device__ TokenError g_token_error;

constexpr int kMaxDevices = 64;
TokenError* g_records[kMaxDevices] = {};
std::mutex g_records_mutex;

}  // namespace

TokenError* token_error_record() {
  int device = current_cuda_device();
  ND_CHECK(device >= 0 && device < kMaxDevices, "token_error_record: device " << device << " out of range");
  std::lock_guard<std::mutex> lock(g_records_mutex);
  if (g_records[device] == nullptr) {
    void* address = nullptr;
    CUDA_CHECK(cudaGetSymbolAddress(&address, g_token_error));
    g_records[device] = static_cast<TokenError*>(address);
  }
  return g_records[device];
}

void check_token_errors(int device) {
  ND_CHECK(device >= 0 && device < kMaxDevices, "check_token_errors: device " << device << " out of range");
  TokenError* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    record = g_records[device];
  }
  if (record == nullptr) return;  // no kernel on this device took the record yet
  cudaStream_t stream = compute_stream(device);
  TokenError host{};
  CUDA_CHECK(cudaMemcpyAsync(&host, record, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host.op == kNoTokenError) return;
  CUDA_CHECK(cudaMemsetAsync(record, 0, sizeof(TokenError), stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  ND_CHECK(host.op != kEmbeddingTokenError, "embedding: token id " << host.id << " at position " << host.index
                                                                  << " is outside the vocabulary of size "
                                                                  << host.vocab);
  ND_FAIL("cross_entropy: target " << host.id << " at row " << host.index << " is outside the vocabulary [0, "
                                   << host.vocab << ") and is not -1 (ignore)");
}

}  // namespace nd::cuda
