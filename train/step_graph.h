// A whole training step as a CUDA graph: capture the work a function queues on the compute stream
// (with the communicators' streams joined through the usual events), then replay it each step. The
// graph owns the device blocks allocated during capture (tensor/memory_stats.h graph pools).
// Also: host-to-device uploads through pinned staging, stream-ordered, for the step's inputs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace nd::train {

class StepGraph {
 public:
  explicit StepGraph(int device);
  ~StepGraph();  // destroys the graph, then hands its blocks back to the allocator
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Runs `enqueue_step` with the compute stream in capture mode: its kernels are recorded, not
  // run. Returns true when a graph was made (then call replay() to run this step), false with
  // the reason in `why` when the work could not be captured (something synchronised with the
  // host, say); the device is then left as before and the caller runs the step eagerly.
  bool capture(const std::function<void()>& enqueue_step, std::string* why);
  bool ready() const { return exec_ != nullptr; }
  void replay();  // queues one run of the graph on the compute stream

 private:
  void release();

  int device_;
  int pool_ = 0;           // allocator graph pool; 0 = none
  void* exec_ = nullptr;   // cudaGraphExec_t
};

// Copies host tensors into the step's input tensors of the same shape and dtype: on a GPU through
// a pinned staging buffer, queued on the compute stream (no host wait); on the CPU a plain copy. A slot's staging is overwritten by its
// next upload, so the caller synchronises with the device between two uploads into one slot
// (the trainer reads each step's loss back).
class PinnedUploader {
 public:
  explicit PinnedUploader(Device device) : device_(device) {}
  ~PinnedUploader();
  PinnedUploader(const PinnedUploader&) = delete;
  PinnedUploader& operator=(const PinnedUploader&) = delete;

  // `slot` picks a staging region (one per input of a step); `dst` must be on this device.
  void upload(int slot, const Tensor& host, Tensor& dst);

 private:
  void upload_to_gpu(int slot, const Tensor& host, Tensor& dst);

  Device device_;
  std::vector<std::pair<void*, size_t>> staging_;  // pinned buffer and its size, per slot
};

}  // namespace nd::train
