// The pipeline's pieces for the trainer (pipeline_setup.h).
#include "train/pipeline_setup.h"

#include "train/pipeline_schedule.h"
#include "train/pipeline_stages.h"

namespace nd::train {

namespace {

PipelineOptions pipeline_options(const TrainConfig& c, const nn::GPTConfig& model_config,
                                 const dist::ParallelGrid& grid) {
  PipelineOptions options;
  options.kind = c.parallel.pp_schedule;
  options.shape = PipelineShape{c.parallel.pp, c.data.grad_accum, c.parallel.pp_virtual};
  options.stage_blocks =
      pipeline_stage_blocks(c.model.n_layer, c.parallel.pp * c.parallel.pp_virtual, c.parallel.pp_layers);
  options.hidden = pipeline_hidden_shape(c, grid);
  options.draws = dropout_draws(model_config, c.data.batch_size, c.model.block_size);
  options.world_rank = grid.world_rank();
  options.timeline_dir = c.observe.pp_timeline;
  return options;
}

}  // namespace

nn::GPTStage pipeline_stage(const TrainConfig& c, const dist::ParallelGrid& grid) {
  if (grid.pp_size() == 1) return {};
  const PipelineShape shape{c.parallel.pp, c.data.grad_accum, c.parallel.pp_virtual};
  const std::vector<int> first =
      pipeline_stage_blocks(c.model.n_layer, c.parallel.pp * c.parallel.pp_virtual, c.parallel.pp_layers);
  nn::GPTStage stage;
  for (int chunk = 0; chunk < c.parallel.pp_virtual; ++chunk) {
    const int g = shape.global_stage(grid.pp_rank(), chunk);
    stage.chunks.push_back({first[g], first[g + 1]});
  }
  return stage;
}

Shape pipeline_hidden_shape(const TrainConfig& c, const dist::ParallelGrid& grid) {
  const int T =
      c.parallel.sequence_parallel && grid.tp_size() > 1 ? c.model.block_size / grid.tp_size() : c.model.block_size;
  return Shape{c.data.batch_size, T, c.model.n_embd};
}

std::unique_ptr<Schedule> make_pipeline_schedule(const TrainConfig& c, const nn::GPTConfig& model_config,
                                                 nn::GPT& model, const dist::ParallelGrid& grid) {
  return std::make_unique<PipelineSchedule>(model, grid.pp(), pipeline_options(c, model_config, grid));
}

double pipeline_eval(const TrainConfig& c, const nn::GPT& model, const EvalReader& reader,
                     const dist::ParallelGrid& grid) {
  return pipeline_eval_loss(model, reader, c.schedule.eval_iters, grid.pp(), pipeline_options(c, model.config(), grid));
}

void set_pipeline_norm(AdamW& optimizer, const nn::GPT& model, const dist::ParallelGrid& grid) {
  std::vector<std::string> counted, not_counted;
  for (const auto& [name, info] : model.named_param_infos()) {
    const bool tied_copy = info.tied && !model.is_first_stage();
    const bool tp_copy = !info.split.sharded() && grid.tp_rank() > 0;
    (tied_copy || tp_copy ? not_counted : counted).push_back(name);
  }
  optimizer.set_tensor_parallel(&grid.model_parallel(), counted, not_counted);
}

int64_t whole_model_count(int64_t stage_count, const nn::GPT& model, const dist::ParallelGrid& grid) {
  if (grid.pp_size() == 1) return stage_count;
  int64_t n = stage_count;
  if (!model.is_first_stage()) {
    const nn::NamedParameters params = model.named_parameters();
    const nn::NamedParamInfos infos = model.named_param_infos();
    for (size_t i = 0; i < params.size(); ++i)
      if (infos[i].second.tied) n -= params[i].second.data().numel() * infos[i].second.shards;
  }
  grid.pp().host_allreduce(&n, 1, dist::HostReduce::Sum);
  return n;
}

}  // namespace nd::train
