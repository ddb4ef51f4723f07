// The pipeline timeline of pipeline_timeline.h.
#include "train/pipeline_timeline.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "tensor/error.h"
#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "tensor/cuda_check.h"
#include "tensor/cuda_stream.h"
#endif

namespace nd::train {

struct PipelineTimeline::Mark {
  std::chrono::steady_clock::time_point wall;
#if NANODIST_WITH_CUDA
  cudaEvent_t event = nullptr;
  ~Mark() {
    if (event) cudaEventDestroy(event);
  }
#endif
};

PipelineTimeline::PipelineTimeline(std::string dir, Device device, int world_rank, int pp_rank, PipelineKind kind,
                                   const PipelineShape& shape)
    : dir_(std::move(dir)), device_(device), world_rank_(world_rank), pp_rank_(pp_rank), kind_(kind), shape_(shape) {}

PipelineTimeline::~PipelineTimeline() = default;

PipelineTimeline::Mark& PipelineTimeline::mark(size_t index) {
  while (marks_.size() <= index) marks_.push_back(std::make_unique<Mark>());
  Mark& m = *marks_[index];
#if NANODIST_WITH_CUDA
  if (device_.is_cuda()) {
    if (!m.event) CUDA_CHECK(cudaEventCreate(&m.event));
    CUDA_CHECK(cudaEventRecord(m.event, compute_stream(device_.index)));
    return m;
  }
#endif
  m.wall = std::chrono::steady_clock::now();
  return m;
}

void PipelineTimeline::begin_step() {
  actions_.clear();
  used_ = 0;
  mark(used_++);
}

void PipelineTimeline::begin(const PipeAction& action) {
  actions_.push_back(action);
  mark(used_++);
}

void PipelineTimeline::end() { mark(used_++); }

double PipelineTimeline::elapsed_ms(size_t index) const {
#if NANODIST_WITH_CUDA
  if (device_.is_cuda()) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, marks_[0]->event, marks_[index]->event));
    return ms;
  }
#endif
  return std::chrono::duration<double, std::milli>(marks_[index]->wall - marks_[0]->wall).count();
}

void PipelineTimeline::finish_step() {
  mark(used_++);
  const size_t last = used_ - 1;
#if NANODIST_WITH_CUDA
  if (device_.is_cuda()) CUDA_CHECK(cudaEventSynchronize(marks_[last]->event));
#endif
  std::ostringstream json;
  json << "{\"world_rank\":" << world_rank_ << ",\"pp_rank\":" << pp_rank_ << ",\"schedule\":\""
       << pipeline_kind_name(kind_) << "\",\"stages\":" << shape_.stages << ",\"micro\":" << shape_.micro
       << ",\"virtual\":" << shape_.virtual_ << ",\"step\":" << ++steps_ << ",\"step_ms\":" << elapsed_ms(last)
       << ",\"spans\":[";
  for (size_t i = 0; i < actions_.size(); ++i) {
    const PipeAction& a = actions_[i];
    json << (i ? "," : "") << "{\"op\":\"" << pipe_op_name(a.op) << "\",\"micro\":" << a.micro
         << ",\"chunk\":" << a.chunk << ",\"start\":" << elapsed_ms(1 + 2 * i) << ",\"end\":" << elapsed_ms(2 + 2 * i)
         << "}";
  }
  json << "]}\n";
  const std::string path = dir_ + "/timeline_rank" + std::to_string(world_rank_) + ".json";
  std::ofstream out(path, std::ios::trunc);
  ND_CHECK_INPUT(out.good(), "--pp-timeline: cannot write " << path);
  out << json.str();
}

}  // namespace nd::train
