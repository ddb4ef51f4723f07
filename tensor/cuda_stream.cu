// Per-device compute streams, created lazily and kept for the whole process
// (they are never destroyed, so no static destructor races the CUDA runtime's shutdown).
#include "tensor/cuda_stream.h"

#include <map>
#include <mutex>
#include <vector>

#include "tensor/cuda_check.h"

namespace nd {

namespace {

struct DeviceStreams {
  cudaStream_t compute = nullptr;
};

std::mutex g_mutex;
std::vector<DeviceStreams>* g_streams = new std::vector<DeviceStreams>();

int resolve(int device) { return device < 0 ? current_cuda_device() : device; }

DeviceStreams& streams_of(int device) {
  device = resolve(device);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_streams->empty()) {
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    g_streams->resize(count);
  }
  ND_CHECK(device >= 0 && device < static_cast<int>(g_streams->size()),
           "CUDA device " << device << " does not exist (" << g_streams->size() << " present)");
  DeviceStreams& s = (*g_streams)[device];
  if (!s.compute) {
    int previous = 0;
    CUDA_CHECK(cudaGetDevice(&previous));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaSetDevice(previous));
  }
  return s;
}

}  // namespace

int current_cuda_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

int multiprocessor_count(int device) {
  static std::mutex mutex;
  static std::map<int, int> counts;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = counts.find(device);
  if (it != counts.end()) return it->second;
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  counts[device] = sms;
  return sms;
}

cudaStream_t compute_stream(int device) { return streams_of(device).compute; }

bool compute_stream_capturing(int device) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(streams_of(device).compute, &status));
  return status != cudaStreamCaptureStatusNone;
}

void synchronize_device_streams(int device) {
  CUDA_CHECK(cudaStreamSynchronize(streams_of(device).compute));
}

}  // namespace nd
