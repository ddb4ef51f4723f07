// A step captured as a CUDA graph, for the GPU tests of collectives: the capture must close (every
// comm stream forked into it joined back, no host synchronisation inside) and its replays must give
// the step's results. The caller runs the step once eagerly first (layout agreements and lazy
// set-ups wait on the host) and keeps the step's buffers alive while the graph lives.
#pragma once
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>

namespace nd::test {

class CapturedGraph {
 public:
  // Captures step() on `stream`; a capture or instantiation that fails is a test failure, and
  // then ok() is false.
  CapturedGraph(cudaStream_t stream, const std::function<void()>& step) : stream_(stream) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
      ADD_FAILURE() << "cudaStreamBeginCapture failed";
      return;
    }
    step();
    if (cudaStreamEndCapture(stream, &graph_) != cudaSuccess) {
      (void)cudaGetLastError();
      ADD_FAILURE() << "the capture failed: a host synchronisation inside it, or a stream forked into it "
                       "and never joined back";
      return;
    }
    if (cudaGraphInstantiateWithFlags(&exec_, graph_, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      exec_ = nullptr;
      ADD_FAILURE() << "cudaGraphInstantiateWithFlags failed";
    }
  }
  ~CapturedGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  bool ok() const { return exec_ != nullptr; }
  // Launches the graph on the stream it was captured on; false (and a test failure) when it fails.
  bool replay() {
    if (exec_ && cudaGraphLaunch(exec_, stream_) == cudaSuccess) return true;
    ADD_FAILURE() << "cudaGraphLaunch failed";
    return false;
  }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace nd::test
#endif
