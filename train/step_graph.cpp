// CUDA graph capture and replay of the training step, and pinned-memory uploads of its inputs.
// A call that would synchronise with the host inside capture (cudaStreamSynchronize on the
// captured streams, a host copy through copy_bytes) fails, and capture() reports it. The mode is
// relaxed so that a block the warm-up steps did not leave cached can still be cudaMalloc'ed.
#include "train/step_graph.h"

#include <cstring>

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#include "tensor/memory_stats.h"
#endif

namespace nd::train {

#if NANODIST_WITH_CUDA

StepGraph::StepGraph(int device) : device_(device) {}

StepGraph::~StepGraph() { release(); }

void StepGraph::release() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = nullptr;
  if (pool_) release_graph_pool(device_, pool_);
  pool_ = 0;
}

bool StepGraph::capture(const std::function<void()>& enqueue_step, std::string* why) {
  release();
  cudaStream_t stream = compute_stream(device_);
  pool_ = begin_graph_pool(device_);
  cudaGraph_t graph = nullptr;
  std::string failure;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    enqueue_step();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  // Ends the capture in every case; fails when the step left a side stream unjoined.
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  end_graph_pool(device_);
  if (failure.empty() && ended != cudaSuccess)
    failure = std::string("ending the capture: ") + cudaGetErrorString(ended);
  if (failure.empty()) {
    cudaGraphExec_t exec = nullptr;
    cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (made == cudaSuccess) {
      exec_ = exec;
    } else {
      failure = std::string("instantiating the graph: ") + cudaGetErrorString(made);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  if (!failure.empty()) {
    cudaGetLastError();  // capture errors are not sticky: clear them, the device stays usable
    release();
    if (why) *why = failure;
    return false;
  }
  return true;
}

void StepGraph::replay() {
  ND_CHECK(exec_, "replay of a CUDA graph that was never captured");
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), compute_stream(device_)));
}

PinnedUploader::~PinnedUploader() {
  for (auto& [ptr, bytes] : staging_) cudaFreeHost(ptr);
}

void PinnedUploader::upload_to_gpu(int slot, const Tensor& host, Tensor& dst) {
  ND_CHECK(host.device().is_cpu() && dst.device() == device_,
           "pinned upload from " << host.str() << " into " << dst.str());
  ND_CHECK(host.shape() == dst.shape() && host.dtype() == dst.dtype(),
           "pinned upload from " << host.str() << " into " << dst.str() << ": shapes or dtypes differ");
  if (static_cast<size_t>(slot) >= staging_.size()) staging_.resize(slot + 1, {nullptr, 0});
  auto& [buffer, bytes] = staging_[slot];
  if (bytes < host.nbytes()) {
    if (buffer) CUDA_CHECK(cudaFreeHost(buffer));
    buffer = nullptr;
    CUDA_CHECK(cudaHostAlloc(&buffer, host.nbytes(), cudaHostAllocDefault));
    bytes = host.nbytes();
  }
  std::memcpy(buffer, host.raw_data(), host.nbytes());
  CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), buffer, host.nbytes(), cudaMemcpyHostToDevice, compute_stream(device_.index)));
}

#else

StepGraph::StepGraph(int device) : device_(device) {}
StepGraph::~StepGraph() = default;
void StepGraph::release() {}
bool StepGraph::capture(const std::function<void()>&, std::string* why) {
  if (why) *why = "this nanodist was built without CUDA";
  return false;
}
void StepGraph::replay() { ND_FAIL("this nanodist was built without CUDA"); }

PinnedUploader::~PinnedUploader() = default;
void PinnedUploader::upload_to_gpu(int, const Tensor&, Tensor&) { ND_FAIL("this nanodist was built without CUDA"); }

#endif

void PinnedUploader::upload(int slot, const Tensor& host, Tensor& dst) {
  if (device_.is_cuda()) return upload_to_gpu(slot, host, dst);
  ND_CHECK(dst.device() == device_, "upload into " << dst.str() << ", expected a tensor on " << device_.str());
  dst.copy_from(host);
}

}  // namespace nd::train
