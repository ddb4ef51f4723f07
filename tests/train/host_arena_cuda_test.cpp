// A pinned HostArena's pieces are page-locked host memory the GPU copies into asynchronously (the
// checkpoint snapshot's device-to-host copies), across chunks, with the bytes arriving intact.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "tensor/cuda_check.h"
#include "train/ckpt/host_arena.h"

namespace nd::train {
namespace {

TEST(HostArenaCuda, PinnedPiecesTakeAsyncDeviceCopies) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
  HostArena arena(/*pinned=*/true);
  const std::vector<size_t> counts = {1000, 1 << 20, 3, 5 << 20};  // floats; the last needs a new chunk
  std::vector<float*> pieces;
  for (size_t n : counts) pieces.push_back(static_cast<float*>(arena.take(n * sizeof(float))));
  EXPECT_GE(arena.chunks(), 2u);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  for (size_t k = 0; k < counts.size(); ++k) {
    cudaPointerAttributes attr{};
    CUDA_CHECK(cudaPointerGetAttributes(&attr, pieces[k]));
    EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "piece " << k << " is not page-locked";
    std::vector<float> values(counts[k]);
    for (size_t i = 0; i < counts[k]; ++i) values[i] = static_cast<float>(k * 1000003 + i);
    float* device = nullptr;
    CUDA_CHECK(cudaMalloc(&device, counts[k] * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(device, values.data(), counts[k] * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpyAsync(pieces[k], device, counts[k] * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaFree(device));
    size_t wrong = 0;
    for (size_t i = 0; i < counts[k]; ++i) wrong += pieces[k][i] != values[i];
    EXPECT_EQ(wrong, 0u) << "piece " << k;
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace nd::train
