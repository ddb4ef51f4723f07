// The pipeline's timeline for the docs and the benchmark (--pp-timeline DIR): each rank
// records when each of its passes ran in a step, relative to the step's start (CUDA events on the
// compute stream on a GPU, the wall clock on the CPU), and writes the last step's spans to
// DIR/timeline_rank<R>.json; scripts/plot_pp_timeline.py draws them. The gaps between spans are
// the bubble and the waits for transfers. Reading the events back waits for the step, so a
// recorded step runs eagerly (no CUDA graph).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "train/pipeline_plan.h"

namespace nd::train {

class PipelineTimeline {
 public:
  // Writes DIR/timeline_rank<world_rank>.json at each finish_step().
  PipelineTimeline(std::string dir, Device device, int world_rank, int pp_rank, PipelineKind kind,
                   const PipelineShape& shape);
  ~PipelineTimeline();
  PipelineTimeline(const PipelineTimeline&) = delete;
  PipelineTimeline& operator=(const PipelineTimeline&) = delete;

  void begin_step();
  void begin(const PipeAction& action);
  void end();
  // Waits for the step's events and rewrites this rank's file with its spans.
  void finish_step();

 private:
  struct Mark;
  double elapsed_ms(size_t mark) const;
  Mark& mark(size_t index);
  std::string dir_;
  Device device_;
  int world_rank_, pp_rank_;
  PipelineKind kind_;
  PipelineShape shape_;
  std::vector<PipeAction> actions_;
  std::vector<std::unique_ptr<Mark>> marks_;  // 0: the step's start, then (begin, end) per action
  size_t used_ = 0;
  int64_t steps_ = 0;
};

}  // namespace nd::train
