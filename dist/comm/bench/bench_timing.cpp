// time_launches (bench_timing.h): eager batches timed by CommTimer, graph batches captured on the
// compute stream (each call forks the comm's stream off it, the last CommWork joins it back) and
// timed by CUDA events around one replay.
#include "dist/comm/bench/bench_timing.h"

#include <chrono>

#include "dist/comm/bench/comm_timer.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::dist {

BenchTiming parse_bench_timing(const std::string& name) {
  if (name == "eager") return BenchTiming::Eager;
  if (name == "graph") return BenchTiming::Graph;
  ND_FAIL_INPUT("unknown --timing '" << name << "' (expected eager or graph)");
}

const char* bench_timing_name(BenchTiming timing) { return timing == BenchTiming::Graph ? "graph" : "eager"; }

namespace {

double eager_seconds(Comm& comm, int warmup, int iters, const std::function<CommWork()>& launch, BenchLoad* load,
                     bool* outlasted) {
  CommWork work;
  for (int i = 0; i < warmup; ++i) work = launch();
  work.wait();
  CommTimer timer(comm);
  const auto began = std::chrono::steady_clock::now();
  for (int attempt = 1;; ++attempt) {
    if (load) load->start(iters);
    comm.barrier();  // the ranks start the batch together
    timer.start();
    // Only the last CommWork is kept: calls on one comm run in order, and a wait for each would
    // add a compute-stream round trip per call that nccl-tests does not pay either.
    for (int i = 0; i < iters; ++i) work = launch();
    const double seconds = timer.stop() / iters;
    work.wait();
    if (!load) return seconds;
    // Every rank's load must have outlasted the batch, else all time it again with a longer one,
    // within the bounds (the slowest rank's clock decides, so all stop together).
    double state[2] = {load->finish(seconds) ? 0.0 : 1.0,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()};
    comm.host_allreduce(state, 2, HostReduce::Max);
    if (state[0] == 0.0 || attempt >= kLoadTries || state[1] >= kLoadWallSeconds) {
      if (outlasted) *outlasted = state[0] == 0.0;
      return seconds;
    }
  }
}

#if NANODIST_WITH_CUDA
double graph_seconds(Comm& comm, int warmup, int iters, const std::function<CommWork()>& launch) {
  const int device = comm.device().index;
  cudaStream_t stream = compute_stream(device);
  comm.synchronize();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::string failure;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  try {
    CommWork work;
    for (int i = 0; i < iters; ++i) work = launch();
    work.wait();  // joins the comm's stream (and so every call before) back into the capture
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (failure.empty() && ended != cudaSuccess) failure = std::string("ending the capture: ") + cudaGetErrorString(ended);
  if (failure.empty()) {
    const cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (made != cudaSuccess) failure = std::string("instantiating the graph: ") + cudaGetErrorString(made);
  }
  if (graph) cudaGraphDestroy(graph);
  if (!failure.empty()) (void)cudaGetLastError();  // capture errors are not sticky
  // All ranks learn whether any capture failed, so none waits for a peer that raised.
  int64_t failed = failure.empty() ? 0 : 1;
  comm.host_allreduce(&failed, 1, HostReduce::Max);
  if (failed) {
    if (exec) cudaGraphExecDestroy(exec);
    ND_FAIL_INPUT("--timing graph: the calls could not be captured in a CUDA graph ("
                  << (failure.empty() ? "on another rank" : failure) << ")");
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  if (warmup > 0) CUDA_CHECK(cudaGraphLaunch(exec, stream));  // also uploads the graph
  CUDA_CHECK(cudaStreamSynchronize(stream));
  comm.barrier();
  CUDA_CHECK(cudaEventRecord(start, stream));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  return ms * 1e-3 / iters;
}
#endif

}  // namespace

double time_launches(Comm& comm, BenchTiming timing, int warmup, int iters, const std::function<CommWork()>& launch,
                     BenchLoad* load, bool* load_outlasted) {
  if (load_outlasted) *load_outlasted = true;
  ND_CHECK(iters >= 1, "time_launches: iters must be >= 1, got " << iters);
  ND_CHECK(!load || timing == BenchTiming::Eager, "time_launches: a load needs eager timing");
  double seconds = 0;
  if (timing == BenchTiming::Graph) {
    ND_CHECK_INPUT(comm.device().is_cuda(), "--timing graph needs --device cuda (CUDA graphs)");
#if NANODIST_WITH_CUDA
    seconds = graph_seconds(comm, warmup, iters, launch);
#endif
  } else {
    seconds = eager_seconds(comm, warmup, iters, launch, load, load_outlasted);
  }
  comm.host_allreduce(&seconds, 1, HostReduce::Max);
  return seconds;
}

}  // namespace nd::dist
