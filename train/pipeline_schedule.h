// The pipeline-parallel schedules in the step's schedule slot (train/schedule.h): this rank runs
// its program (train/pipeline_plan.h) over its model chunks: between two passes one grouped
// send/recv over the pipeline group moves the activations (forward) and their gradients
// (backward) into buffers allocated once (the hidden state's shape is fixed). Each forward draws
// the dropout masks a one-stage run draws for those blocks: the generator is set to where that
// run would be. The last stage's losses reach every stage (a sum over the pipeline group), so
// the loop, the log line and the metrics read them as at pp 1.
#pragma once
#include <memory>
#include <vector>

#include "data/loader.h"
#include "dist/comm/comm.h"
#include "autograd/weight_grad_queue.h"
#include "train/pipeline_plan.h"
#include "train/pipeline_timeline.h"
#include "train/schedule.h"

namespace nd::train {

// Where a one-stage run's dropout generator stands: a forward draws `embed` counters in the
// embedding, then `block` in each block (zero without dropout or in eval mode).
struct DropoutDraws {
  uint64_t embed = 0;
  uint64_t block = 0;
};
// The draws of a GPT of `config` on (B, T) batches in training mode.
DropoutDraws dropout_draws(const nn::GPTConfig& config, int batch_size, int block_size);

struct PipelineOptions {
  PipelineKind kind = PipelineKind::OneFOneB;
  PipelineShape shape;  // stages = pp, micro = the step's micro-batches, virtual_ = chunks per rank
  // Global stage g holds blocks [stage_blocks[g], stage_blocks[g + 1]) (P V + 1 entries).
  std::vector<int> stage_blocks;
  Shape hidden;  // the hidden state between stages: (B, T, C), or (B / tp, T, C) under sequence parallelism
  DropoutDraws draws;
  int world_rank = 0;  // names this rank's timeline file
  // A directory for each step's timeline of this rank's passes (train/pipeline_timeline.h); "" = none.
  std::string timeline_dir;
};

class PipelineSchedule : public Schedule {
 public:
  // `model`: this rank's blocks, V chunks of them in order (chunk c is global stage c P + rank),
  // outliving the schedule; `pp` the pipeline group (rank = pipeline rank).
  PipelineSchedule(nn::GPT& model, dist::Comm& pp, PipelineOptions options);
  void run(nn::GPT& model, dist::DataParallelEngine& data_parallel, MicroBatches& batches, Generator& dropout_gen) override;

 private:
  struct InFlight {
    Variable input;   // the received activation as a leaf (not on the first stage)
    Variable output;  // the stage's output, or its loss on the last stage
  };
  void post(size_t slot);  // starts the transfers of the program's group `slot`
  void post_group(const std::vector<PipeTransfer>& group);  // as one NCCL (or MPI) group
  void wait_posted();  // completes them; later compute-stream work sees what they received
  void forward(const PipeAction& a, MicroBatches& batches, Generator& gen, uint64_t step_offset);
  void backward(const PipeAction& a, MicroBatches& batches);
  int global(int chunk) const { return options_.shape.global_stage(rank_, chunk); }
  InFlight& slot(int chunk, int micro) { return in_flight_[chunk * options_.shape.micro + micro]; }

  nn::GPT& model_;
  std::vector<int> chunk_first_;  // chunk c is the model's local blocks [chunk_first_[c], chunk_first_[c + 1])
  dist::Comm& pp_;
  PipelineOptions options_;
  int rank_ = 0;
  RankProgram program_;
  std::vector<std::vector<std::vector<PipeTransfer>>> slot_groups_;  // [slot]: the groups posted there
  // [chunk * micro + m]: receive buffers, fixed for the run (addresses stay for a CUDA graph).
  std::vector<Tensor> activations_, gradients_;
  std::vector<InFlight> in_flight_;
  std::vector<ops::WeightGradientQueue> weight_work_;  // [chunk * micro + m]: zero-bubble's W passes
  std::unique_ptr<PipelineTimeline> timeline_;  // with options.timeline_dir only
};

// The pipeline's evaluation: the mean loss of `model` (this rank's chunks, eval mode) over batches
// 0..iters-1 of `reader`, each batch sent through the global stages in turn; every rank of `pp`
// gets the last stage's mean. `options` as the schedule's (shape, stage_blocks, hidden).
// Collective over `pp`.
double pipeline_eval_loss(const nn::GPT& model, const EvalReader& reader, int iters, dist::Comm& pp,
                          const PipelineOptions& options);

// Where chunk c of pipeline rank `rank` starts among its model's blocks (V + 1 entries).
std::vector<int> local_chunk_starts(const PipelineOptions& options, int rank);

}  // namespace nd::train
